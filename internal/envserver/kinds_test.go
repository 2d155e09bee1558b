package envserver

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/jsonl"
	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/trace"
	"cwm/internal/tracer"
	"cwm/internal/trajectory"
)

const fixAdd = "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\ndef add(a, b):\n    return a + b\n>>>>>>> REPLACE"

// rollout runs a model against a swe episode over /ws, as a trainer's
// rollout worker does: the observation's messages go to the model, its
// reply comes back as the action, until the episode is done.
func rollout(t *testing.T, f *fixture, client *model.Client, reset string) map[string]any {
	t.Helper()
	w := f.dial("")
	r := w.call(reset)
	var msgs []model.Message
	for {
		if errorCode(r) != "" {
			t.Fatalf("rollout: %v", r)
		}
		o := obs(r)
		b, _ := json.Marshal(o["messages"])
		var next []model.Message
		json.Unmarshal(b, &next)
		msgs = append(msgs, next...)
		if r["data"].(map[string]any)["done"] == true {
			return r["data"].(map[string]any)
		}
		rep, err := client.Complete(context.Background(), model.Request{Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, rep.Message)
		r = w.call(map[string]any{"type": "step", "data": map[string]any{"message": rep.Message,
			"usage": map[string]any{"prompt_tokens": rep.Usage.PromptTokens, "completion_tokens": rep.Usage.CompletionTokens}}})
	}
}

// A scripted model that fixes the bug and submits gets reward 1, graded
// by the hidden tests; one that idles to its last turn does not. Both
// episodes are written to the trajectories file, numbered apart.
func TestSWEResolvedAndIdle(t *testing.T) {
	out := filepath.Join(t.TempDir(), "traj.jsonl")
	f := newFixture(t, func(o *Options) {
		o.Trajectories = out
		o.Limits.MaxTurns = 4
	})
	solver, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		return []modeltest.Reply{
			modeltest.Tool("edit", fixAdd),
			modeltest.Tool("bash", "git diff > /tmp/fix.patch && python3 -m unittest -q test_calc 2>&1 | tail -1"),
			modeltest.Tool("submit", "/tmp/fix.patch"),
		}[min(r.Turn(), 2)]
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer solver.Close()
	idler, err := modeltest.Start(func(*modeltest.Request) modeltest.Reply { return modeltest.Tool("bash", "true") }, false)
	if err != nil {
		t.Fatal(err)
	}
	defer idler.Close()
	client := func(url string) *model.Client {
		c, err := model.NewClient(model.ClientConfig{BaseURL: url, Model: "fake"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	done := rollout(t, f, client(solver.URL), `{"type": "reset", "data": {"task_id": "calc-1", "model": "fake"}}`)
	meta := done["observation"].(map[string]any)["metadata"].(map[string]any)
	if done["reward"] != 1.0 || meta["resolved"] != true || meta["exit_reason"] != "submitted" {
		t.Errorf("solved episode: reward %v, metadata %v; want 1, resolved, submitted", done["reward"], meta)
	}
	done = rollout(t, f, client(idler.URL), `{"type": "reset", "data": {"task_id": "calc-1", "model": "fake"}}`)
	meta = done["observation"].(map[string]any)["metadata"].(map[string]any)
	if done["reward"] == 1.0 || meta["resolved"] != false || meta["exit_reason"] != "max_turns" {
		t.Errorf("idle episode: reward %v, metadata %v; want no reward 1, unresolved, max_turns", done["reward"], meta)
	}

	var trs []trajectory.Trajectory
	if err := jsonl.Decode(out, func(_ int, tr trajectory.Trajectory) error { trs = append(trs, tr); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(trs) != 2 {
		t.Fatalf("%d trajectories written, want 2", len(trs))
	}
	if tr := trs[0]; tr.ExitReason != trajectory.ExitSubmitted || tr.Resolved == nil || !*tr.Resolved || tr.SubmittedPatch == nil ||
		tr.Turns != 3 || len(tr.Steps) != 3 || !strings.Contains(tr.Patch, "+    return a + b") || tr.Model != "fake" {
		t.Errorf("first trajectory: %+v", tr)
	}
	if tr := trs[1]; tr.ExitReason != trajectory.ExitMaxTurns || tr.Sample != 1 || tr.Turns != 4 || len(tr.Steps) != 3 {
		t.Errorf("second trajectory: exit %s sample %d turns %d steps %d; want max_turns, sample 1, 4 turns of which 3 ran",
			tr.ExitReason, tr.Sample, tr.Turns, len(tr.Steps))
	}
	// A step after the end is refused; the state says how it ended.
	if v := f.metric(`cwm_serve_episodes_finished_total{kind="swe",exit_reason="submitted"}`); v != "1" {
		t.Errorf("finished{submitted} = %q, want 1", v)
	}
}

// A shell episode is a sandbox on an environment with the SWE tools, here
// through the openai protocol's tool calls; submit ends it with no
// reward, its patch in the metadata.
func TestShellKindOpenAI(t *testing.T) {
	f := newFixture(t, nil)
	code, body, _ := f.do("POST", "/v1/episodes", map[string]any{"kind": "shell", "env": "calc-env", "protocol": "openai",
		"instruction": "Make add add."}, "")
	if code != 201 {
		t.Fatalf("create = %d %v", code, body)
	}
	id := body["episode_id"].(string)
	o := obs(body)
	if msgs := o["messages"].([]any); len(msgs) != 2 || msgs[1].(map[string]any)["content"] != "Make add add." || len(o["tools"].([]any)) != 5 {
		t.Errorf("shell reset observation = %v", o)
	}
	step := func(tool string, args any) map[string]any {
		t.Helper()
		code, body, _ := f.do("POST", "/v1/episodes/"+id+"/step", map[string]any{"action": map[string]any{"tool": tool, "arguments": args}}, "")
		if code != 200 {
			t.Fatalf("step %s = %d %v", tool, code, body)
		}
		return body
	}
	r := step("bash", map[string]any{"command": "git status --short; grep -c 'a + b' calc.py"})
	if o := obs(r); o["output"] != "1" || o["messages"].([]any)[0].(map[string]any)["tool_call_id"] != "call_1" {
		t.Errorf("bash = %v, want the untouched repository (no bug planted in a shell episode)", o)
	}
	r = step("view", map[string]any{"path": "calc.py", "start": 1, "end": 2})
	if o := obs(r); !strings.Contains(o["output"].(string), "def add(a, b):") {
		t.Errorf("view = %v", o)
	}
	r = step("nope", map[string]any{})
	if o := obs(r); o["format_error"] != true {
		t.Errorf("unknown tool = %v, want a format error", o)
	}
	step("bash", map[string]any{"command": "echo '# more' >> calc.py && git diff > /tmp/p.diff"})
	r = step("submit", map[string]any{"path": "/tmp/p.diff"})
	if r["done"] != true || r["reward"] != nil || !strings.Contains(obs(r)["metadata"].(map[string]any)["patch"].(string), "+# more") {
		t.Errorf("submit = %v, want done, no reward, the patch", r)
	}
	if code, body, _ := f.do("POST", "/v1/episodes/"+id+"/step", map[string]any{"action": map[string]any{"tool": "bash", "arguments": map[string]any{"command": "true"}}}, ""); code != 409 || body["code"] != CodeSessionError {
		t.Errorf("step after the end = %d %v, want 409 SESSION_ERROR", code, body)
	}
	if code, _, _ := f.do("DELETE", "/v1/episodes/"+id, nil, ""); code != 200 {
		t.Errorf("delete = %d", code)
	}
	if code, _, _ := f.do("GET", "/v1/episodes/"+id, nil, ""); code != 404 {
		t.Errorf("get after delete = %d, want 404", code)
	}
}

// A trace episode teacher-forces a trace: the prompt and the true frames,
// concatenated, are the trace's exact text; exact predictions earn 1, a
// wrong value 0.5 (partial) or 0 (exact), a malformed one 0. Code and a
// call bring their own trace, made by the tracer at reset.
func TestTraceKind(t *testing.T) {
	f := newFixture(t, nil)
	f.srv.opts.NewTracer = func(ctx context.Context) (*tracer.Pool, error) {
		return tracer.NewPool(ctx, f.rt, tracer.Options{Workers: 1})
	}
	for _, mode := range []string{"partial", "exact"} {
		w := f.dial("")
		r := w.call(map[string]any{"type": "reset", "data": map[string]any{"kind": "trace",
			"code": "def f(a,b):\n    y = a\n    for i in range(b):\n        y += y * i\n    return y\n", "call": "f(1,3)", "reward": mode}})
		if errorCode(r) != "" {
			t.Fatalf("trace reset: %v", r)
		}
		text := obs(r)["text"].(string)
		want := text
		var rewards []float64
		for step := 0; ; step++ {
			// The prediction is the true frame, found by tracing the truth
			// ahead of time: the server's own frames, replayed; step 5
			// guesses i wrong and step 7 is malformed.
			var pred string
			switch step {
			case 5:
				pred = `<|line_sep|>{"a": "..", "b": "..", "y": "..", "i": "9"}<|action_sep|>        y += y * i` + "\n<|frame_sep|>"
			case 7:
				pred = "<|line_sep|>{oops"
			default:
				pred = truthOf(t, text, step)
			}
			r = w.call(map[string]any{"type": "step", "data": map[string]any{"frame": pred}})
			d := r["data"].(map[string]any)
			o := obs(r)
			want += o["frame"].(string)
			rewards = append(rewards, d["reward"].(float64))
			if d["done"] == true {
				break
			}
		}
		if want != trace.Encode(paperTrace(t, text)) {
			t.Errorf("%s: prompt and frames = %q, want the trace's text", mode, want)
		}
		if len(rewards) != 14 || rewards[0] != 1 || rewards[7] != 0 || rewards[13] != 1 {
			t.Errorf("%s: rewards %v, want 14 frames, 1 but step 5 and 7", mode, rewards)
		}
		if wantWrong := map[string]float64{"partial": 0.5, "exact": 0}[mode]; rewards[5] != wantWrong {
			t.Errorf("%s: reward of a wrong value %v, want %v", mode, rewards[5], wantWrong)
		}
	}
}

// paperTrace is the paper's worked example (CWM-SPEC 1.4) under the
// tracer's context for the same code and call.
func paperTrace(t *testing.T, prompt string) trace.Trace {
	t.Helper()
	tr, err := trace.Parse(prompt + paperFrames + trace.TokEndOfText)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// paperFrames are CWM-SPEC 1.4's frames.
const paperFrames = `<|call_sep|>{}<|action_sep|>def main(): # << START_OF_TRACE` + "\n" + `<|frame_sep|>` +
	`<|line_sep|>{}<|action_sep|>    return f(1,3)` + "\n" + `<|frame_sep|>` +
	`<|call_sep|>{"a": "1", "b": "3"}<|action_sep|>def f(a,b):` + "\n" + `<|frame_sep|>` +
	`<|line_sep|>{"a": "..", "b": ".."}<|action_sep|>    y = a` + "\n" + `<|frame_sep|>` +
	`<|line_sep|>{"a": "..", "b": "..", "y": "1"}<|action_sep|>    for i in range(b):` + "\n" + `<|frame_sep|>` +
	`<|line_sep|>{"a": "..", "b": "..", "y": "..", "i": "0"}<|action_sep|>        y += y * i` + "\n" + `<|frame_sep|>` +
	`<|line_sep|>{"a": "..", "b": "..", "y": "..", "i": ".."}<|action_sep|>    for i in range(b):` + "\n" + `<|frame_sep|>` +
	`<|line_sep|>{"a": "..", "b": "..", "y": "..", "i": "1"}<|action_sep|>        y += y * i` + "\n" + `<|frame_sep|>` +
	`<|line_sep|>{"a": "..", "b": "..", "y": "2", "i": ".."}<|action_sep|>    for i in range(b):` + "\n" + `<|frame_sep|>` +
	`<|line_sep|>{"a": "..", "b": "..", "y": "..", "i": "2"}<|action_sep|>        y += y * i` + "\n" + `<|frame_sep|>` +
	`<|line_sep|>{"a": "..", "b": "..", "y": "6", "i": ".."}<|action_sep|>    for i in range(b):` + "\n" + `<|frame_sep|>` +
	`<|line_sep|>{"a": "..", "b": "..", "y": "..", "i": ".."}<|action_sep|>    return y` + "\n" + `<|frame_sep|>` +
	`<|return_sep|><|action_sep|>    return y` + "\n" + `<|arg_sep|>"6"<|frame_sep|>` +
	`<|return_sep|><|action_sep|>    return f(1,3)` + "\n" + `<|arg_sep|>"6"<|frame_sep|>`

// truthOf is frame i of the paper's trace, as text.
func truthOf(t *testing.T, prompt string, i int) string {
	t.Helper()
	return string(trace.AppendFrame(nil, paperTrace(t, prompt).Frames[i]))
}
