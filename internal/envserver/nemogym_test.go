package envserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// NeMo Gym's resources-server schema, as NVIDIA-NeMo/Gym declares it at
// commit 07d6b0d07b22fcf530b4c211dae2ee23100428e4 (2026-08-22; the
// package needs Python >= 3.13.14 and is not on the package index, so it
// is quoted here, not imported):
//
// nemo_gym/base_resources_server.py, SimpleResourcesServer.setup_webserver:
//
//	app.post("/seed_session")(self.seed_session)
//	app.post("/verify")(judge_failsafe(self.verify))
//	app.post("/aggregate_metrics")(self.aggregate_metrics)
//	app.get("/reverify_mode")(self.get_reverify_mode)
//
// and its pydantic models:
//
//	class BaseRunRequest(BaseModel):
//	    responses_create_params: NeMoGymResponseCreateParamsNonStreaming
//	class BaseVerifyRequest(BaseRunRequest):
//	    response: NeMoGymResponse
//	class BaseVerifyResponse(BaseVerifyRequest):
//	    reward: float
//	class BaseMultiRewardVerifyResponse(BaseVerifyResponse):
//	    reward_components: dict[str, float]
//	class BaseSeedSessionRequest(BaseModel): pass
//	class BaseSeedSessionResponse(BaseModel): pass
//
// nemo_gym/config_types.py:
//
//	class AggregateMetricsRequest(BaseModel):
//	    verify_responses: List[Dict[str, Any]]
//	class AggregateMetrics(BaseModel):
//	    group_level_metrics: List[Dict[str, Any]]
//	    agent_metrics: Dict[str, Any]
//	    key_metrics: Dict[str, Any]
//
// responses_api_agents/simple_agent/app.py posts the row to /seed_session,
// each function call to /{name} with its arguments as the body, and the
// row with "response" to /verify, carrying the cookies each answer sets.
// TASK_INDEX_KEY_NAME is "_ng_task_index" (nemo_gym/global_config.py).

// nemoClient is NeMo Gym's agent as far as the resources server sees it:
// JSON bodies, a cookie jar.
type nemoClient struct {
	t    *testing.T
	url  string
	http *http.Client
}

func newNemoClient(t *testing.T, url string) *nemoClient {
	jar, _ := cookiejar.New(nil)
	return &nemoClient{t: t, url: url, http: &http.Client{Jar: jar}}
}

func (c *nemoClient) post(path string, body any) (int, map[string]any) {
	c.t.Helper()
	b, _ := json.Marshal(body)
	resp, err := c.http.Post(c.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		c.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		c.t.Fatalf("POST %s: %d %s: not a JSON object", path, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

// nemoRow is a NeMo Gym dataset row for cwm's task: the Responses API
// request, the row's own fields (here the task), its indices.
func nemoRow(fields map[string]any, task, rollout int) map[string]any {
	row := map[string]any{"responses_create_params": map[string]any{"input": []any{map[string]any{"role": "user", "content": "Fix the bug."}}},
		"_ng_task_index": task, "_ng_rollout_index": rollout}
	for k, v := range fields {
		row[k] = v
	}
	return row
}

// nemoResponse is a NeMoGymResponse as the agent hands /verify: the
// Responses API's answer, which cwm passes back untouched.
var nemoResponse = map[string]any{"id": "resp_1", "object": "response", "created_at": 0.0, "model": "scripted",
	"output": []any{map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "Done."}}}}}

// NeMo Gym's resources-server API served by cwm: /seed_session starts a
// swe episode of the row's task, the tools run in it, /verify grades it
// with the hidden tests (a fix without submit: its final diff; a rollout
// that submits: its patch) and answers BaseMultiRewardVerifyResponse,
// /aggregate_metrics sums the verify responses up.
func TestNeMoGymResourcesServer(t *testing.T) {
	f := newFixture(t, nil)
	c := newNemoClient(t, f.url)

	// A rollout that fixes the bug and never submits: /verify grades the
	// final diff.
	code, seed := c.post("/seed_session", nemoRow(map[string]any{"task_id": f.task.InstanceID}, 0, 0))
	if code != 200 || seed["episode_id"] == nil {
		t.Fatalf("seed_session: %d %v", code, seed)
	}
	if tools := seed["observation"].(map[string]any)["tools"]; tools == nil {
		t.Errorf("seed_session's observation has no tools: %v", seed["observation"])
	}
	search, replace, _ := strings.Cut(strings.TrimPrefix(fixAdd, "calc.py\n<<<<<<< SEARCH\n"), "\n=======\n")
	replace = strings.TrimSuffix(replace, "\n>>>>>>> REPLACE")
	if code, r := c.post("/edit", map[string]any{"path": "calc.py", "search": search, "replace": replace}); code != 200 || r["done"] != false {
		t.Fatalf("edit: %d %v", code, r)
	}
	row := nemoRow(map[string]any{"task_id": f.task.InstanceID}, 0, 0)
	row["response"] = nemoResponse
	code, fixed := c.post("/verify", row)
	if code != 200 {
		t.Fatalf("verify: %d %v", code, fixed)
	}
	if diff := cmp.Diff(map[string]any{"reward": 1.0, "reward_components": map[string]any{"resolved": 1.0, "similarity": fixed["reward_components"].(map[string]any)["similarity"]},
		"resolved": true, "exit_reason": "stopped", "response": nemoResponse, "responses_create_params": row["responses_create_params"]},
		pick(fixed, "reward", "reward_components", "resolved", "exit_reason", "response", "responses_create_params")); diff != "" {
		t.Errorf("verify of a fix (-want +got):\n%s", diff)
	}
	// The episode is closed and the cookie cleared: a second verify has
	// no session.
	if code, r := c.post("/verify", row); code != 400 || r["code"] != "SESSION_ERROR" {
		t.Errorf("second verify: %d %v, want 400 SESSION_ERROR", code, r)
	}

	// A rollout by the Task API's split that submits a wrong fix: the
	// episode ends at the submit, /verify reads its grade.
	code, seed = c.post("/seed_session", nemoRow(map[string]any{"split": "all", "index": 0}, 1, 0))
	if code != 200 {
		t.Fatalf("seed_session by split: %d %v", code, seed)
	}
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"edit", map[string]any{"path": "calc.py", "search": search, "replace": "def add(a, b):\n    return a - b - 0"}},
		{"bash", map[string]any{"command": "git diff > /tmp/fix.patch"}},
		{"submit", map[string]any{"path": "/tmp/fix.patch"}},
	} {
		if code, r := c.post("/"+call.tool, call.args); code != 200 || r["done"] != (call.tool == "submit") {
			t.Fatalf("%s: %d %v", call.tool, code, r)
		}
	}
	row = nemoRow(map[string]any{"split": "all", "index": 0}, 1, 0)
	row["response"] = nemoResponse
	code, wrong := c.post("/verify", row)
	// A near miss: unresolved, similar to the gold patch (reward 0, cwm's shaping).
	if code != 200 || wrong["reward"] != 0.0 || wrong["resolved"] != false || wrong["exit_reason"] != "submitted" ||
		wrong["reward_components"].(map[string]any)["resolved"] != 0.0 {
		t.Errorf("verify of a wrong fix: %d %v; want reward 0, unresolved, submitted", code, wrong)
	}

	code, agg := c.post("/aggregate_metrics", map[string]any{"verify_responses": []any{fixed, wrong}})
	if code != 200 {
		t.Fatalf("aggregate_metrics: %d %v", code, agg)
	}
	if diff := cmp.Diff(map[string]any{"mean/reward": 0.5, "max/reward": 1.0, "min/reward": 0.0, "mean/resolved": 0.5},
		pick(agg["agent_metrics"].(map[string]any), "mean/reward", "max/reward", "min/reward", "mean/resolved")); diff != "" {
		t.Errorf("agent_metrics (-want +got):\n%s", diff)
	}
	if groups := agg["group_level_metrics"].([]any); len(groups) != 2 || groups[1].(map[string]any)["_ng_task_index"] != 1.0 ||
		groups[1].(map[string]any)["mean/reward"] != 0.0 {
		t.Errorf("group_level_metrics %v, want tasks 0 and 1, task 1's mean reward 0", groups)
	}
	if km := agg["key_metrics"].(map[string]any); km["mean/reward"] != 0.5 || km["max/reward"] != nil {
		t.Errorf("key_metrics %v, want the means only", km)
	}

	// Bad input: the code and status OpenEnv's table gives, nothing left
	// open. A seed_session is a reset: its unknown split or index past the
	// end is a reset's VALIDATION_ERROR (422), not the Task API's 400.
	for _, tc := range []struct {
		name, path string
		body       any
		status     int
		code       string
	}{
		{"verify without a session", "/verify", map[string]any{}, 400, "SESSION_ERROR"},
		{"tool without a session", "/bash", map[string]any{"command": "true"}, 400, "SESSION_ERROR"},
		{"unknown task", "/seed_session", map[string]any{"task_id": "no-such-task"}, 404, "VALIDATION_ERROR"},
		{"unknown split", "/seed_session", map[string]any{"split": "nope", "index": 0}, 422, "VALIDATION_ERROR"},
		{"index past the end", "/seed_session", map[string]any{"split": "all", "index": 5}, 422, "VALIDATION_ERROR"},
		{"task id of the wrong type", "/seed_session", map[string]any{"task_id": 5}, 422, "VALIDATION_ERROR"},
		{"not an object", "/seed_session", []any{1}, 422, "VALIDATION_ERROR"},
		{"aggregate without responses", "/aggregate_metrics", map[string]any{}, 422, "VALIDATION_ERROR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, r := newNemoClient(t, f.url).post(tc.path, tc.body)
			if code != tc.status || r["code"] != tc.code {
				t.Errorf("POST %s %v: %d %v, want %d %s", tc.path, tc.body, code, r, tc.status, tc.code)
			}
		})
	}
	waitFor(t, time.Minute, "no episode left", func() bool { return f.slots() == 0 })
}

// pick is the fields of m named by keys that m has.
func pick(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// A verify while a tool call runs in the episode is refused (409), and
// the episode stays open: the verify after the call grades it.
func TestNeMoGymVerifyBusy(t *testing.T) {
	// The call sleeps until the step timeout kills it: it is running
	// when the verify arrives (sent as soon as the server says the
	// episode is busy, well within the timeout), and ends by itself.
	const stepTimeout = 10 * time.Second
	f := newFixture(t, func(o *Options) { o.Limits.CommandTimeout = stepTimeout })
	c := newNemoClient(t, f.url)
	code, seed := c.post("/seed_session", nemoRow(map[string]any{"task_id": f.task.InstanceID}, 0, 0))
	if code != 200 {
		t.Fatalf("seed_session: %d %v", code, seed)
	}
	id := seed["episode_id"].(string)
	done := make(chan int, 1)
	go func() {
		code, _ := c.post("/bash", map[string]any{"command": "sleep 600"})
		done <- code
	}()
	waitFor(t, time.Minute, "the call running", func() bool {
		f.srv.mu.Lock()
		e := f.srv.entries[id]
		f.srv.mu.Unlock()
		return e != nil && e.busy.Load()
	})
	row := nemoRow(map[string]any{"task_id": f.task.InstanceID}, 0, 0)
	row["response"] = nemoResponse
	if code, r := c.post("/verify", row); code != 409 || r["code"] != "SESSION_ERROR" {
		t.Errorf("verify during a call: %d %v, want 409 SESSION_ERROR", code, r)
	}
	if code := <-done; code != 200 {
		t.Fatalf("the call killed at the step timeout answered %d, want 200", code)
	}
	if code, r := c.post("/verify", row); code != 200 || r["reward"] != -1.0 || r["exit_reason"] != "stopped" {
		t.Errorf("verify after the call: %d %v, want 200, reward -1 (nothing changed), stopped", code, r)
	}
}
