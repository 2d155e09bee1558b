package envserver

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"cwm/internal/env"
	"cwm/internal/task"
)

// The frames below are written from OpenEnv's message models
// (src/openenv/core/env_server/types.py at the commit docs/serve.md
// names): WSResetMessage {type: "reset", data: {}}, WSStepMessage {type:
// "step", data: {...}} (data required), WSStateMessage and WSCloseMessage
// {type} only, all extra="forbid"; the replies are WSObservationResponse
// {type: "observation", data: {observation, reward, done}},
// WSStateResponse {type: "state", data: {episode_id, step_count, ...}}
// and WSErrorResponse {type: "error", data: {message, code}} with a
// WSErrorCode.

// One session goes through every message type and every error a message
// can earn, and stays usable after each error.
func TestWSProtocolFrames(t *testing.T) {
	f := newFixture(t, nil)
	w := f.dial("")

	// Before any reset: OpenEnv's initial State, and a step has no episode.
	st := w.call(`{"type": "state"}`)
	if d := st["data"].(map[string]any); st["type"] != "state" || d["episode_id"] != nil || d["step_count"] != 0.0 {
		t.Errorf("state before reset = %v, want episode_id null, step_count 0", st)
	}
	if c := errorCode(w.call(bash("true"))); c != CodeSessionError {
		t.Errorf("step before reset: code %q, want %s", c, CodeSessionError)
	}

	errs := []struct {
		name, frame, code string
	}{
		{"invalid JSON", `{"type": "reset"`, CodeInvalidJSON},
		{"not an object", `[1, 2]`, CodeValidationError},
		{"unknown type", `{"type": "render"}`, CodeUnknownType},
		{"no type", `{"data": {}}`, CodeUnknownType},
		{"extra field on state", `{"type": "state", "data": {}}`, CodeValidationError},
		{"extra field on reset", `{"type": "reset", "data": {}, "id": 1}`, CodeValidationError},
		{"step without data", `{"type": "step"}`, CodeValidationError},
		{"reset data not an object", `{"type": "reset", "data": [1]}`, CodeValidationError},
		{"unknown reset field", `{"type": "reset", "data": {"task": null, "colour": "red"}}`, CodeValidationError},
		{"unknown task", `{"type": "reset", "data": {"task_id": "no-such-task"}}`, CodeValidationError},
		{"field of another kind", `{"type": "reset", "data": {"task_id": "calc-1", "trace_id": "x"}}`, CodeValidationError},
		{"bad protocol", `{"type": "reset", "data": {"task_id": "calc-1", "protocol": "xml"}}`, CodeValidationError},
		{"negative seed", `{"type": "reset", "data": {"task_id": "calc-1", "seed": -1}}`, CodeValidationError},
		{"bug patch that does not apply", `{"type": "reset", "data": {"task": {"instance_id": "bad-1", "env_id": "calc-env", "bug_patch": "diff --git a/nope b/nope\n--- a/nope\n+++ b/nope\n@@ -1 +1 @@\n-x\n+y\n", "FAIL_TO_PASS": ["t"]}}}`, CodeFactoryError},
	}
	for _, tt := range errs {
		r := w.call(tt.frame)
		if c := errorCode(r); c != tt.code {
			t.Errorf("%s: reply %v, want code %s", tt.name, r, tt.code)
		}
		if d, _ := r["data"].(map[string]any); d == nil || d["message"] == "" {
			t.Errorf("%s: error without a message: %v", tt.name, r)
		}
	}

	r := w.call(`{"type": "reset", "data": {"task_id": "calc-1", "seed": 7, "episode_id": "ep-1"}}`)
	o := obs(r)
	if r["type"] != "observation" || o == nil || r["data"].(map[string]any)["done"] != false {
		t.Fatalf("reset reply = %v", r)
	}
	msgs := o["messages"].([]any)
	if len(msgs) != 2 || !strings.Contains(msgs[1].(map[string]any)["content"].(string), "add(2, 3) returns -1") {
		t.Errorf("reset observation messages = %v, want the system prompt and the issue", msgs)
	}
	r = w.call(bash("cd /tmp && echo hello"))
	if o := obs(r); o["output"] != "hello" || o["ok"] != true || o["exit_code"] != 0.0 || o["turn"] != 1.0 {
		t.Errorf("step reply = %v", r)
	}
	if m := obs(r)["messages"].([]any)[0].(map[string]any); !strings.HasPrefix(m["content"].(string), "<output>\nhello\n</output>\n\n<budget>") {
		t.Errorf("step message = %v, want CWM's framing", m)
	}
	// Actions are validated as OpenEnv validates them (extra="forbid").
	for _, bad := range []string{
		`{"type": "step", "data": {"text": "x", "colour": 1}}`,
		`{"type": "step", "data": {"text": 5}}`,
		`{"type": "step", "data": {}}`,
		`{"type": "step", "data": {"text": "x", "tool": "bash"}}`,
	} {
		if r := w.call(bad); errorCode(r) != CodeValidationError || r["data"].(map[string]any)["errors"] == nil {
			t.Errorf("%s: reply %v, want VALIDATION_ERROR with errors", bad, r)
		}
	}
	// A reply without a tool call is CWM's format error, fed back.
	r = w.call(map[string]any{"type": "step", "data": map[string]any{"text": "I think the bug is in calc.py."}})
	if o := obs(r); o["format_error"] != true || !strings.Contains(o["output"].(string), "No tool calls found") {
		t.Errorf("format error step = %v", r)
	}
	st = w.call(`{"type": "state"}`)
	if d := st["data"].(map[string]any); d["episode_id"] != "ep-1" || d["step_count"] != 2.0 || d["kind"] != "swe" || d["task_id"] != "calc-1" {
		t.Errorf("state = %v, want ep-1 after 2 steps", st)
	}
	// A second reset replaces the episode in the same slot.
	if r := w.call(`{"type": "reset", "data": {"task_id": "calc-1"}}`); r["type"] != "observation" {
		t.Fatalf("second reset = %v", r)
	}
	if d := w.call(`{"type": "state"}`)["data"].(map[string]any); d["episode_id"] == "ep-1" || d["step_count"] != 0.0 {
		t.Errorf("state after the second reset = %v, want a new episode", d)
	}
	if n := f.slots(); n != 1 {
		t.Errorf("slots = %d after two resets in one session, want 1", n)
	}
	w.send(`{"type": "close"}`)
	if _, err := w.tryRecv(10 * time.Second); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("after close: %v, want a normal closure", err)
	}
	waitFor(t, 10*time.Second, "the closed session's slot freed", func() bool { return f.slots() == 0 })
	if v := f.metric(`cwm_serve_errors_total{code="VALIDATION_ERROR"}`); v == "" || v == "0" {
		t.Errorf("errors_total{VALIDATION_ERROR} = %q", v)
	}
}

// Health, schema and metadata answer as OpenEnv's routes do.
func TestInfoRoutes(t *testing.T) {
	f := newFixture(t, nil)
	if code, body, _ := f.do("GET", "/health", nil, ""); code != 200 || body["status"] != "healthy" {
		t.Errorf("/health = %d %v", code, body)
	}
	for _, kind := range []string{"", "?kind=trace", "?kind=shell"} {
		code, body, _ := f.do("GET", "/schema"+kind, nil, "")
		if code != 200 || body["action"] == nil || body["observation"] == nil || body["state"] == nil {
			t.Errorf("/schema%s = %d %v", kind, code, body)
		}
	}
	if code, _, _ := f.do("GET", "/schema?kind=chess", nil, ""); code != http.StatusUnprocessableEntity {
		t.Errorf("/schema?kind=chess = %d, want 422", code)
	}
	code, body, _ := f.do("GET", "/metadata", nil, "")
	for _, k := range []string{"name", "description", "readme_content", "version", "author", "documentation_url"} {
		if _, ok := body[k]; !ok || code != 200 {
			t.Errorf("/metadata = %d %v, want field %s", code, body, k)
		}
	}
	// The description names every extension a client may look for.
	desc, _ := body["description"].(string)
	for _, ext := range []string{"clone", "checkpoint,", "checkpoints", "rollback", "branch", "release_checkpoint", "/v1/episodes/ID/checkpoints", "/metrics"} {
		if !strings.Contains(desc, ext) {
			t.Errorf("/metadata's description = %q, want it to name %s", desc, ext)
		}
	}
}

// A server refuses to start with a task whose environment is missing, or
// an unknown kind: every reset would fail.
func TestNewRefusesBadOptions(t *testing.T) {
	base := Options{Sandboxes: env.NewSandboxes(nil), Store: env.NewStore(t.TempDir())}
	o := base
	o.Tasks = []task.Task{{InstanceID: "t-1", EnvID: "nope"}}
	if _, err := New(o); err == nil || !strings.Contains(err.Error(), `no environment "nope"`) {
		t.Errorf("New with a task on a missing environment: %v", err)
	}
	o = base
	o.Kind = "chess"
	if _, err := New(o); err == nil {
		t.Errorf("New with kind chess succeeded")
	}
}
