package report

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// browser is a headless Chromium driven over the DevTools protocol on a
// loopback port: it loads a page, evaluates scripts in it, and collects
// the console errors and uncaught exceptions the page had.
type browser struct {
	cmd  *exec.Cmd
	conn *websocket.Conn
	ctx  context.Context

	mu      sync.Mutex
	next    int
	pending map[int]chan json.RawMessage
	errors  []string
	loaded  chan struct{}
}

func startBrowser(t *testing.T) *browser {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("Debian's chromium is needed for the report's tests (make setup installs it): %v", err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--no-first-run", "--user-data-dir="+dir, "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "about:blank")
	// Its own process group, so that its zygote, GPU and renderer
	// processes go with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	// Chromium writes the port it took to DevToolsActivePort.
	var port string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort")); err == nil {
			if line, _, _ := strings.Cut(string(b), "\n"); line != "" {
				port = line
				break
			}
		}
	}
	if port == "" {
		t.Fatal("chromium did not open its DevTools port within 30 s")
	}
	res, err := http.Get("http://127.0.0.1:" + port + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	var targets []struct{ Type, WebSocketDebuggerURL string }
	err = json.NewDecoder(res.Body).Decode(&targets)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var ws string
	for _, tg := range targets {
		if tg.Type == "page" {
			ws = tg.WebSocketDebuggerURL
		}
	}
	if ws == "" {
		t.Fatalf("no page target among %+v", targets)
	}
	conn, _, err := websocket.Dial(ctx, ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(64 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	b := &browser{cmd: cmd, conn: conn, ctx: ctx, pending: map[int]chan json.RawMessage{}, loaded: make(chan struct{}, 1)}
	go b.read()
	for _, m := range []string{"Runtime.enable", "Log.enable", "Page.enable"} {
		b.call(t, m, nil)
	}
	return b
}

// read dispatches replies to their callers and keeps the events the tests
// look at.
func (b *browser) read() {
	for {
		_, data, err := b.conn.Read(b.ctx)
		if err != nil {
			return
		}
		var m struct {
			ID     int             `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		b.mu.Lock()
		switch {
		case m.ID != 0:
			if ch := b.pending[m.ID]; ch != nil {
				if m.Error != nil {
					ch <- json.RawMessage(fmt.Sprintf(`{"__error": %s}`, m.Error))
				} else {
					ch <- m.Result
				}
				delete(b.pending, m.ID)
			}
		case m.Method == "Runtime.exceptionThrown":
			b.errors = append(b.errors, "exception: "+string(m.Params))
		case m.Method == "Runtime.consoleAPICalled" && strings.Contains(string(m.Params), `"type":"error"`):
			b.errors = append(b.errors, "console.error: "+string(m.Params))
		case m.Method == "Log.entryAdded" && strings.Contains(string(m.Params), `"level":"error"`):
			b.errors = append(b.errors, "log: "+string(m.Params))
		case m.Method == "Page.loadEventFired":
			select {
			case b.loaded <- struct{}{}:
			default:
			}
		}
		b.mu.Unlock()
	}
}

func (b *browser) call(t *testing.T, method string, params any) json.RawMessage {
	t.Helper()
	b.mu.Lock()
	b.next++
	id := b.next
	ch := make(chan json.RawMessage, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err := b.conn.Write(b.ctx, websocket.MessageText, msg); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	select {
	case r := <-ch:
		if strings.HasPrefix(string(r), `{"__error"`) {
			t.Fatalf("%s: %s", method, r)
		}
		return r
	case <-b.ctx.Done():
		t.Fatalf("%s: no reply", method)
	}
	return nil
}

// open loads a file and waits for its load event.
func (b *browser) open(t *testing.T, path string) {
	t.Helper()
	abs, _ := filepath.Abs(path)
	b.call(t, "Page.navigate", map[string]any{"url": "file://" + abs})
	select {
	case <-b.loaded:
	case <-time.After(30 * time.Second):
		t.Fatal("the page did not load within 30 s")
	}
}

// eval evaluates a JavaScript expression in the page and decodes its
// value into v.
func (b *browser) eval(t *testing.T, expr string, v any) {
	t.Helper()
	r := b.call(t, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(r, &res); err != nil || res.ExceptionDetails != nil {
		t.Fatalf("%s: %v %s", expr, err, res.ExceptionDetails)
	}
	if err := json.Unmarshal(res.Result.Value, v); err != nil {
		t.Fatalf("%s = %s: %v", expr, res.Result.Value, err)
	}
}

func (b *browser) consoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}
