package envserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"cwm/internal/env"
	"cwm/internal/env/envtest"
	"cwm/internal/episode/episodetest"
	"cwm/internal/reward"
	"cwm/internal/sandbox"
	"cwm/internal/task"
)

// fixture is a real server on loopback with real sandboxes: the calc
// repository's environment (unittest suite) and its task.
type fixture struct {
	t      testing.TB
	srv    *Server
	url    string
	rt     *sandbox.Runtime
	rtHome string // the runtime's home: its run directories
	home   string
	env    *env.Env
	task   *task.Task
	cancel context.CancelFunc
	served chan error
	logs   *syncBuffer
}

// syncBuffer is a log sink tests read while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// calcEnv puts the calc repository into a store under home as an
// environment whose tests run with unittest.
func calcEnv(t testing.TB, home string) (*env.Env, *task.Task) {
	t.Helper()
	layer, tk := episodetest.CalcRepo(t)
	// The test runner calls "python", which the venv provides.
	if err := os.MkdirAll(filepath.Join(layer, "venv", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/bin/python3", filepath.Join(layer, "venv", "bin", "python")); err != nil {
		t.Fatal(err)
	}
	e := envtest.Put(t, home, tk.EnvID, layer)
	path := filepath.Join(home, "envs", e.ID, "env.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	m["test_command"] = map[string]any{"framework": "unittest", "line": "python3 -m unittest"}
	b, _ = json.Marshal(m)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return env.NewStore(home).Get(e.ID), tk
}

// fixtureWarm is how many closed sandboxes a fixture's runtime keeps.
const fixtureWarm = 16

// newFixture starts a server; edit adjusts its options.
func newFixture(t testing.TB, edit func(*Options)) *fixture {
	t.Helper()
	rtHome := t.TempDir()
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: rtHome, Warm: fixtureWarm})
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	e, tk := calcEnv(t, home)
	logs := &syncBuffer{}
	opts := Options{Sandboxes: env.NewSandboxes(rt), Store: env.NewStore(home), Tasks: []task.Task{*tk},
		Mapping: rewardMapping("cwm"), Log: slogTo(logs)}
	if edit != nil {
		edit(&opts)
	}
	srv, err := New(opts)
	if err != nil {
		rt.Close()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &fixture{t: t, srv: srv, url: Addr(ln), rt: rt, rtHome: rtHome, home: home, env: e, task: tk, cancel: cancel,
		served: make(chan error, 1), logs: logs}
	go func() { f.served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		f.stop()
		rt.Close()
	})
	return f
}

// stop drains the server and waits for Serve to return.
func (f *fixture) stop() error {
	f.cancel()
	select {
	case err := <-f.served:
		f.served <- err
		return err
	case <-time.After(2 * time.Minute):
		f.t.Errorf("Serve did not return after its context was cancelled")
		return nil
	}
}

// do sends a REST request and decodes the JSON answer.
func (f *fixture) do(method, path string, body any, token string) (int, map[string]any, http.Header) {
	f.t.Helper()
	code, raw, h := f.request(method, path, body, token)
	var out map[string]any
	json.Unmarshal(raw, &out)
	return code, out, h
}

// doRaw sends a REST request and decodes whatever JSON comes back.
func (f *fixture) doRaw(method, path string, body any, token string) (int, any) {
	f.t.Helper()
	code, raw, _ := f.request(method, path, body, token)
	var out any
	json.Unmarshal(raw, &out)
	return code, out
}

// request sends a REST request: body a string as it is, or a value as
// JSON.
func (f *fixture) request(method, path string, body any, token string) (int, []byte, http.Header) {
	f.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, f.url+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, resp.Header
}

// wsClient is a /ws connection speaking raw frames.
type wsClient struct {
	t  testing.TB
	c  *websocket.Conn
	hr *http.Response
}

func (f *fixture) dial(query string) *wsClient {
	f.t.Helper()
	c, err := f.tryDial(query, nil)
	if err != nil {
		f.t.Fatalf("dial /ws%s: %v", query, err)
	}
	return c
}

func (f *fixture) tryDial(query string, h http.Header) (*wsClient, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, hr, err := websocket.Dial(ctx, strings.Replace(f.url, "http", "ws", 1)+"/ws"+query, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		return &wsClient{t: f.t, hr: hr}, err
	}
	c.SetReadLimit(64 << 20)
	f.t.Cleanup(func() { c.CloseNow() })
	return &wsClient{t: f.t, c: c, hr: hr}, nil
}

// send writes one frame, a string as it is or a value as JSON.
func (w *wsClient) send(v any) {
	w.t.Helper()
	b, ok := v.(string)
	if !ok {
		j, _ := json.Marshal(v)
		b = string(j)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageText, []byte(b)); err != nil {
		w.t.Fatalf("write %s: %v", b, err)
	}
}

// recv reads one frame as a JSON object.
func (w *wsClient) recv() map[string]any {
	w.t.Helper()
	m, err := w.tryRecv(2 * time.Minute)
	if err != nil {
		w.t.Fatalf("read: %v", err)
	}
	return m
}

func (w *wsClient) tryRecv(d time.Duration) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, b, err := w.c.Read(ctx)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("reply %s: %v", b, err)
	}
	return m, nil
}

// call sends a message and returns the reply.
func (w *wsClient) call(v any) map[string]any {
	w.t.Helper()
	w.send(v)
	return w.recv()
}

// errorCode is the code of an error reply, "" for another reply.
func errorCode(m map[string]any) string {
	if m["type"] != "error" {
		return ""
	}
	d, _ := m["data"].(map[string]any)
	c, _ := d["code"].(string)
	return c
}

// obs is the observation object of an observation reply or REST result.
func obs(m map[string]any) map[string]any {
	if d, ok := m["data"].(map[string]any); ok {
		m = d
	}
	o, _ := m["observation"].(map[string]any)
	return o
}

// bash is a step of the cwm protocol running a command.
func bash(cmd string) map[string]any {
	return map[string]any{"type": "step", "data": map[string]any{"text": "<tool: bash>\n" + cmd + "\n</tool>"}}
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within %s", what, d)
}

// slots is the server's count of taken slots.
func (f *fixture) slots() int {
	f.srv.mu.Lock()
	defer f.srv.mu.Unlock()
	return f.srv.slots
}

// metric reads one line's value from /metrics.
func (f *fixture) metric(line string) string {
	f.t.Helper()
	resp, err := http.Get(f.url + "/metrics")
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, line+" "); ok {
			return v
		}
	}
	return ""
}

func rewardMapping(kind string) reward.Mapping {
	m := reward.Mapping{Kind: kind}
	m.Validate()
	return m
}

func slogTo(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
