package envserver

import (
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A clone has the original's files, directory, exported variables and
// turn count; afterwards neither sees the other's changes. Over /ws the
// clone belongs to the connection that made it until another attaches.
func TestCloneIndependence(t *testing.T) {
	f := newFixture(t, nil)
	w := f.dial("")
	w.call(`{"type": "reset", "data": {"task_id": "calc-1"}}`)
	w.call(bash("echo before > /repo/shared.txt; mkdir -p /tmp/work; cd /tmp/work; export MARK=one"))
	r := w.call(`{"type": "clone"}`)
	if r["type"] != "clone" {
		t.Fatalf("clone = %v", r)
	}
	d := r["data"].(map[string]any)
	id := d["episode_id"].(string)
	if d["step_count"] != 1.0 || d["turn"] != 1.0 {
		t.Errorf("clone state = %v, want step_count and turn 1", d)
	}
	// Another connection attaches to the clone and carries on there.
	w2 := f.dial("?episode_id=" + id)
	if o := obs(w2.call(bash("pwd; echo $MARK; cat /repo/shared.txt"))); o["output"] != "/tmp/work\none\nbefore" || o["turn"] != 2.0 {
		t.Errorf("in the clone: %v, want the directory, the export, the file, turn 2", o)
	}
	w2.call(bash("echo clone > /repo/mine.txt; export MARK=two"))
	w.call(bash("echo original > /repo/theirs.txt"))
	if o := obs(w.call(bash("ls /repo/mine.txt 2>&1 | grep -c 'No such'; echo $MARK"))); o["output"] != "1\none" {
		t.Errorf("the original sees the clone: %v", o)
	}
	if o := obs(w2.call(bash("ls /repo/theirs.txt 2>&1 | grep -c 'No such'"))); o["output"] != "1" {
		t.Errorf("the clone sees the original: %v", o)
	}
	// A second connection cannot take an episode in use by another.
	if w3, err := f.tryDial("?episode_id="+id, nil); err == nil {
		if c := errorCode(w3.recv()); c != CodeSessionError {
			t.Errorf("attaching to an attached episode: code %q, want SESSION_ERROR", c)
		}
	}
	// REST clones too; closing the original leaves its clones.
	code, body, _ := f.do("POST", "/v1/episodes/"+id+"/clone", map[string]any{"episode_id": "rest-clone"}, "")
	if code != 201 || body["episode_id"] != "rest-clone" {
		t.Fatalf("REST clone = %d %v", code, body)
	}
	w.send(`{"type": "close"}`)
	code, body, _ = f.do("POST", "/v1/episodes/rest-clone/step", map[string]any{"action": map[string]any{"text": "<tool: bash>\necho $MARK; cat /repo/mine.txt\n</tool>"}}, "")
	if code != 200 || obs(body)["output"] != "two\nclone" {
		t.Errorf("REST clone step = %d %v", code, body)
	}
}

// A client that drops its connection in the middle of a step loses its
// episode at once: the command is killed, the slot freed.
func TestDisconnectMidStep(t *testing.T) {
	f := newFixture(t, nil)
	w := f.dial("")
	w.call(`{"type": "reset", "data": {"kind": "shell", "env": "calc-env"}}`)
	w.send(bash("echo $$ > /tmp/pid; exec sleep 287.4321"))
	time.Sleep(500 * time.Millisecond)
	w.c.CloseNow()
	waitFor(t, 20*time.Second, "the slot freed after the disconnect", func() bool { return f.slots() == 0 })
	if v := f.metric(`cwm_serve_sessions{kind="shell"}`); v != "0" {
		t.Errorf("sessions{shell} = %s after the disconnect", v)
	}
	waitFor(t, 20*time.Second, "the sandbox's sleep killed", func() bool {
		out, _ := exec.Command("pgrep", "-f", "sleep 287.4321").Output()
		return strings.TrimSpace(string(out)) == ""
	})
}

// Episodes and connections idle past the timeout are closed: a /ws client
// is told why, then the connection closes; a REST episode disappears.
func TestIdleReaping(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.IdleTimeout = 1500 * time.Millisecond })
	code, body, _ := f.do("POST", "/v1/episodes", map[string]any{"kind": "shell", "env": "calc-env"}, "")
	if code != 201 {
		t.Fatalf("create = %d %v", code, body)
	}
	w := f.dial("")
	w.call(`{"type": "reset", "data": {"kind": "shell", "env": "calc-env"}}`)
	// A step longer than the timeout is not idleness.
	if o := obs(w.call(bash("sleep 3; echo awake"))); o["output"] != "awake" {
		t.Errorf("long step = %v", o)
	}
	m := w.recv()
	if c := errorCode(m); c != CodeSessionError || !strings.Contains(m["data"].(map[string]any)["message"].(string), "idle") {
		t.Errorf("idle notice = %v", m)
	}
	if _, err := w.tryRecv(10 * time.Second); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Errorf("after the idle notice: %v, want close 1008", err)
	}
	waitFor(t, 10*time.Second, "every slot freed", func() bool { return f.slots() == 0 })
	if code, _, _ := f.do("GET", "/v1/episodes/"+body["episode_id"].(string), nil, ""); code != 404 {
		t.Errorf("the idle REST episode: %d, want 404", code)
	}
	if v := f.metric("cwm_serve_reaped_total"); v != "2" {
		t.Errorf("reaped_total = %s, want 2", v)
	}
}

// Past MaxSessions a new episode is refused: CAPACITY_REACHED on /ws (at
// connection, as OpenEnv does), 503 with Retry-After on REST; a freed
// slot is taken again.
func TestCapacity(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxSessions = 2 })
	w := f.dial("")
	code, body, _ := f.do("POST", "/v1/episodes", map[string]any{"kind": "shell", "env": "calc-env"}, "")
	if code != 201 {
		t.Fatalf("create = %d %v", code, body)
	}
	if code, b, h := f.do("POST", "/v1/episodes", map[string]any{"kind": "shell", "env": "calc-env"}, ""); code != 503 || b["code"] != CodeCapacityReached || h.Get("Retry-After") == "" || b["max_sessions"] != 2.0 {
		t.Errorf("create past capacity = %d %v %v", code, b, h)
	}
	w2, err := f.tryDial("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := w2.recv(); errorCode(r) != CodeCapacityReached || r["data"].(map[string]any)["active_sessions"] != 2.0 {
		t.Errorf("/ws past capacity = %v", r)
	}
	if _, err := w2.tryRecv(30 * time.Second); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("after CAPACITY_REACHED: %v, want the connection closed", err)
	}
	if code, b, _ := f.do("GET", "/health", nil, ""); code != 200 || b["status"] != "degraded" {
		t.Errorf("/health at capacity = %d %v", code, b)
	}
	f.do("DELETE", "/v1/episodes/"+body["episode_id"].(string), nil, "")
	if code, _, _ := f.do("POST", "/v1/episodes", map[string]any{"kind": "shell", "env": "calc-env"}, ""); code != 201 {
		t.Errorf("create after a delete = %d", code)
	}
	w.send(`{"type": "close"}`)
}

// The server stops with its context: a step in flight finishes and its
// reply arrives, new episodes are refused meanwhile, then every episode
// closes and Serve returns nil.
func TestDrain(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.DrainGrace = 20 * time.Second })
	w := f.dial("")
	w.call(`{"type": "reset", "data": {"kind": "shell", "env": "calc-env"}}`)
	code, _, _ := f.do("POST", "/v1/episodes", map[string]any{"kind": "shell", "env": "calc-env"}, "")
	if code != 201 {
		t.Fatal(code)
	}
	w.send(bash("sleep 2; echo finished"))
	waitFor(t, 20*time.Second, "the step running", func() bool {
		f.srv.mu.Lock()
		defer f.srv.mu.Unlock()
		for _, e := range f.srv.entries {
			if e.busy.Load() {
				return true
			}
		}
		return false
	})
	var wg sync.WaitGroup
	var serveErr error
	wg.Add(1)
	go func() { defer wg.Done(); serveErr = f.stop() }()
	waitFor(t, 5*time.Second, "draining", func() bool {
		f.srv.mu.Lock()
		defer f.srv.mu.Unlock()
		return f.srv.draining
	})
	if o := obs(w.recv()); o["output"] != "finished" {
		t.Errorf("the step in flight: %v, want its reply", o)
	}
	wg.Wait()
	if serveErr != nil {
		t.Errorf("Serve = %v after a drain, want nil", serveErr)
	}
	if _, err := w.tryRecv(5 * time.Second); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("after the drain: %v, want close 1001", err)
	}
	if n := len(f.srv.entries); n != 0 {
		t.Errorf("%d episodes left after the drain", n)
	}
	if _, err := http.Get(f.url + "/health"); err == nil {
		t.Errorf("the server still answers after Serve returned")
	}
}

// Messages past the size limit are refused: /ws closes with 1009, REST
// answers 413; a body that is not JSON is 400.
func TestOversizedAndMalformed(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxMessageBytes = 4096 })
	w := f.dial("")
	w.send(`{"type": "reset", "data": {"instruction": "` + strings.Repeat("x", 5000) + `"}}`)
	if _, err := w.tryRecv(10 * time.Second); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("oversized /ws message: %v, want close 1009", err)
	}
	if code, b, _ := f.do("POST", "/v1/episodes", `{"kind": "shell", "instruction": "`+strings.Repeat("x", 5000)+`"}`, ""); code != 413 {
		t.Errorf("oversized REST body = %d %v, want 413", code, b)
	}
	if code, _, _ := f.do("POST", "/v1/episodes", `{"kind": `, ""); code != 400 {
		t.Errorf("malformed REST body = %d, want 400", code)
	}
	waitFor(t, 10*time.Second, "the closed connection's slot freed", func() bool { return f.slots() == 0 })
}

// With a token, every route but /health needs it, as a Bearer header or a
// token query parameter (on /ws only); a wrong one is 401, and the token
// never reaches the logs.
func TestToken(t *testing.T) {
	const token = "s3cret-t0ken-value"
	f := newFixture(t, func(o *Options) { o.Token = token })
	if code, _, _ := f.do("GET", "/health", nil, ""); code != 200 {
		t.Errorf("/health without a token = %d, want 200", code)
	}
	for _, tok := range []string{"", "wrong", token + "x"} {
		if code, b, h := f.do("GET", "/schema", nil, tok); code != 401 || h.Get("WWW-Authenticate") == "" {
			t.Errorf("/schema with token %q = %d %v", tok, code, b)
		}
	}
	if code, _, _ := f.do("GET", "/metrics", nil, token); code != 200 {
		t.Errorf("/metrics with the token = %d", code)
	}
	// ?token= is for /ws alone (clients that cannot set its headers).
	for _, path := range []string{"/schema", "/metrics", "/metadata", "/v1/episodes"} {
		if code, _, _ := f.do("GET", path+"?token="+token, nil, ""); code != 401 {
			t.Errorf("%s?token= = %d, want 401", path, code)
		}
	}
	if code, _, _ := f.do("POST", "/v1/episodes?token="+token, map[string]any{"kind": "shell"}, ""); code != 401 {
		t.Errorf("POST /v1/episodes?token= = %d, want 401", code)
	}
	if _, err := f.tryDial("?token=wrong", nil); err == nil {
		t.Errorf("/ws with a wrong token connected")
	}
	w := f.dial("?token=" + token)
	if r := w.call(`{"type": "state"}`); r["type"] != "state" {
		t.Errorf("/ws with ?token = %v", r)
	}
	wh, err := f.tryDial("", http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		t.Fatalf("/ws with a Bearer header: %v", err)
	}
	wh.call(`{"type": "state"}`)
	if strings.Contains(f.logs.String(), token) {
		t.Errorf("the token is in the logs:\n%s", f.logs.String())
	}
	if !strings.Contains(f.logs.String(), "path=/ws") {
		t.Errorf("no request lines in the debug log:\n%s", f.logs.String())
	}
}

// A session's episode deleted over REST frees its slot; the session's
// next reset takes a slot again, and the count stays right.
func TestSlotsAfterDelete(t *testing.T) {
	f := newFixture(t, nil)
	w := f.dial("")
	w.call(`{"type": "reset", "data": {"kind": "shell", "env": "calc-env", "episode_id": "mine"}}`)
	if code, _, _ := f.do("DELETE", "/v1/episodes/mine", nil, ""); code != 200 {
		t.Fatalf("delete = %d", code)
	}
	if c := errorCode(w.call(bash("true"))); c != CodeSessionError {
		t.Errorf("a step on the deleted episode: %q, want SESSION_ERROR", c)
	}
	if n := f.slots(); n != 0 {
		t.Errorf("slots = %d after the delete, want 0", n)
	}
	w.call(`{"type": "reset", "data": {"kind": "shell", "env": "calc-env"}}`)
	if n := f.slots(); n != 1 {
		t.Errorf("slots = %d after a new reset, want 1", n)
	}
	w.send(`{"type": "close"}`)
	waitFor(t, 10*time.Second, "the slot freed", func() bool { return f.slots() == 0 })
}
