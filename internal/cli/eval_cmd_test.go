package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/eval"
	"cwm/internal/model/modeltest"
	"cwm/internal/trace"
)

// TestEvalCruxEvalCommand runs cwm eval cruxeval on five problems against
// a model right on three of them (by prompt), then resumes, then checks
// the usage errors, a bad problems file and --show-prompt.
func TestEvalCruxEvalCommand(t *testing.T) {
	t.Setenv("CWM_HOME", t.TempDir())
	ps := eval.CruxEval()[:5]
	replies := map[string]string{}
	for i, p := range ps {
		pr, err := eval.BuildPrompt(eval.Direct, eval.Completions, &p)
		if err != nil {
			t.Fatal(err)
		}
		ans := p.Output
		if i >= 3 {
			ans = "'wrong'"
		}
		replies[pr.Text] = fmt.Sprintf("assert f(%s) == %s\n", p.Input, ans)
	}
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		if rep, ok := replies[r.Prompt]; ok {
			return modeltest.Text(rep)
		}
		return modeltest.Reply{Status: 400, Error: "unscripted"}
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "direct.jsonl")
	args := []string{"eval", "cruxeval", "--model", "m", "--base-url", srv.URL, "--limit", "5", "--out", out,
		"--score-workers", "1", "--quiet"}
	code, stdout, errs := runCLI(t, "", args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(stdout, "cruxeval direct (m): 5 problems, 5 samples, 3 correct\npass@1 60.0% (± 24.5)") ||
		!strings.Contains(stdout, "verdicts: fail 2, pass 3") {
		t.Errorf("summary:\n%s", stdout)
	}
	code, stdout, errs = runCLI(t, "", append(args, "--json")...)
	var sum eval.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s %s", code, err, stdout, errs)
	}
	if sum.Resumed != 5 || sum.Correct != 3 || sum.PassAt["1"] != 0.6 || len(srv.Requests()) != 5 {
		t.Errorf("resumed: %+v after %d requests", sum, len(srv.Requests()))
	}

	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	writeLines(t, bad, `{"id": "a", "code": "def f(): pass", "input": "", "output": "None"}`, `{"id": "b", "code": "x"}`)
	mainDef := filepath.Join(t.TempDir(), "main.jsonl")
	writeLines(t, mainDef, `{"id": "m", "code": "def main():\n    return 1\ndef f():\n    return main()", "input": "", "output": "1"}`)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"eval", "cruxeval", "--out", out}, 2, "--model and --base-url are required"},
		{[]string{"eval", "cruxeval", "--model", "m", "--base-url", "u", "--out", out, "--mode", "guess"}, 2, `unknown mode "guess"`},
		{[]string{"eval", "cruxeval", "--model", "m", "--base-url", "u", "--out", out, "--mode", "trace-full", "--api", "chat"}, 2, "needs --api completions"},
		{[]string{"eval", "cruxeval", "--model", "m", "--base-url", "u", "--out", out, "--in", bad}, 1, "bad.jsonl:2: problem b: want the fields code, input and output"},
		{[]string{"eval", "cruxeval", "--model", "m", "--base-url", srv.URL, "--limit", "5", "--out", out, "--mode", "direct-cot"}, 1, "one output file holds one mode"},
		{[]string{"eval", "cruxeval", "--show-prompt", "--id", "nope"}, 2, `--id "nope": no such problem`},
		{[]string{"eval", "cruxeval", "--show-prompt", "--in", mainDef}, 1, "main.jsonl:1: problem m cannot be scored in cwm's sandbox: the code defines main"},
	} {
		code, _, errs := runCLI(t, "", c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, %s; want %d, %q", c.args, code, errs, c.code, c.want)
		}
	}
	// A model server that fails: exit 1, nothing written, a re-run asks again.
	down, err := modeltest.Start(func(*modeltest.Request) modeltest.Reply { return modeltest.Reply{Status: 503} }, true)
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	out2 := filepath.Join(t.TempDir(), "down.jsonl")
	code, _, errs = runCLI(t, "", "eval", "cruxeval", "--model", "m", "--base-url", down.URL, "--limit", "2", "--out", out2, "--retries", "0", "--quiet")
	if code != 1 || !strings.Contains(errs, "the model server failed 2 requests after its retries; run again to retry them") ||
		!strings.Contains(errs, "sample_0 sample 0: model endpoint failed after 1 attempts") {
		t.Errorf("failing server: exit %d: %s", code, errs)
	}
	code, stdout, _ = runCLI(t, "", "eval", "cruxeval", "--mode", "trace-full", "--show-prompt", "--id", "sample_0")
	if want := "<|begin_of_text|><|trace_context_start|>" + ps[0].TraceContext() + "<|frame_sep|>"; code != 0 || stdout != want {
		t.Errorf("--show-prompt: %d %q", code, stdout)
	}
}

// TestEvalHaltCommand runs cwm eval halt on a programs file against a
// model that answers "terminates" to everything, and its usage errors.
func TestEvalHaltCommand(t *testing.T) {
	t.Setenv("CWM_HOME", t.TempDir())
	in := filepath.Join(t.TempDir(), "progs.jsonl")
	writeLines(t, in,
		`{"id": "a", "code": "x = 3\nwhile x:\n    x -= 1\n", "label": "terminates"}`,
		`{"id": "b", "code": "while True:\n    pass\n", "label": "diverges"}`,
		`{"id": "c", "code": "print(1)\n", "label": "terminates"}`)
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply { return modeltest.Text("terminates") }, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "halt.jsonl")
	code, stdout, errs := runCLI(t, "", "eval", "halt", "--model", "m", "--base-url", srv.URL, "--in", in, "--out", out, "--run-workers", "1", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"halt direct (m): 3 samples, 2 right, accuracy 66.7% (constant: terminates 66.7%, diverges 33.3%)",
		"terminates precision 66.7% recall 100.0% (3 answered, 2 labelled)",
		"diverges   precision 0.0% recall 0.0% (0 answered, 1 labelled)",
		"confusion (label: answers terminates/diverges/none): terminates 2/0/0, diverges 1/0/0",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	writeLines(t, bad, `{"id": "a", "code": "pass", "label": "maybe"}`)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"eval", "halt", "--model", "m", "--base-url", "u", "--out", out, "--mode", "trace-full"}, 2, `--mode "trace-full": want direct or reasoning`},
		{[]string{"eval", "halt", "--model", "m", "--base-url", "u", "--out", out, "--in", bad}, 1, `bad.jsonl:1: a: label "maybe": want terminates or diverges`},
		{[]string{"eval", "halt", "--show-prompt", "--id", "zz"}, 2, `--id "zz": no such program`},
	} {
		code, _, errs := runCLI(t, "", c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, %s; want %d, %q", c.args, code, errs, c.code, c.want)
		}
	}
}

// TestEvalFidelityCommand traces two functions with cwm trace func, then
// runs cwm eval fidelity on them against a model that writes every trace
// and frame exactly (read from the traces file), and wants 100%.
func TestEvalFidelityCommand(t *testing.T) {
	t.Setenv("CWM_HOME", t.TempDir())
	dir := t.TempDir()
	funcs, traces := filepath.Join(dir, "funcs.jsonl"), filepath.Join(dir, "traces.jsonl")
	writeLines(t, funcs,
		`{"id": "paper", "code": "def f(a,b):\n    y = a\n    for i in range(b):\n        y += y * i\n    return y\n", "call": "f(1,3)"}`,
		`{"id": "raises", "code": "def f(s):\n    return s.index('z')\n", "input": "'abc'"}`,
		`{"id": "slow", "code": "def f():\n    while True:\n        pass\n", "input": ""}`)
	if code, _, errs := runCLI(t, "", "trace", "func", "--in", funcs, "--out", traces, "--workers", "1", "--timeout", "1s"); code != 0 {
		t.Fatalf("trace func: %s", errs)
	}
	recs, skipped, err := eval.LoadTraces(traces)
	if err != nil || len(recs) != 2 || skipped != 1 {
		t.Fatalf("%d traces, %d skipped: %v", len(recs), skipped, err)
	}
	replies := map[string]string{}
	for _, r := range recs {
		var all []byte
		for i, f := range r.Frames {
			fr := trace.AppendFrame(nil, f)
			replies[eval.TracePrompt(&r, i)] = strings.TrimSuffix(string(fr), trace.TokFrameSep)
			all = append(all, fr...)
		}
		replies[eval.TracePrompt(&r, 0)+"#full"] = string(all)
	}
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		if len(r.Stop) == 1 && r.Stop[0] == trace.TokEndOfText {
			return modeltest.Text(replies[r.Prompt+"#full"])
		}
		return modeltest.Text(replies[r.Prompt])
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	out := filepath.Join(dir, "fid.jsonl")
	code, stdout, errs := runCLI(t, "", "eval", "fidelity", "--traces", traces, "--model", "m", "--base-url", srv.URL, "--out", out, "--next", "3", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"fidelity (m): 2 traces predicted whole: strict format 100.0%, valid 100.0%, output correct 100.0%",
		"per step by position: state 100.0%, action 100.0%, both 100.0%",
		"teacher-forced next frame: 6 steps, valid 100.0%, state 100.0%, action 100.0%, both 100.0%",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	if code, _, errs := runCLI(t, "", "eval", "fidelity", "--traces", traces, "--out", out); code != 2 || !strings.Contains(errs, "--model and --base-url are required") {
		t.Errorf("no model: %d %s", code, errs)
	}
}

// TestReportCommand writes a report from a cruxeval output and checks its
// usage and input errors (the page itself is tested in a browser by
// internal/report).
func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	in, bad, out := filepath.Join(dir, "direct.jsonl"), filepath.Join(dir, "bad.jsonl"), filepath.Join(dir, "r.html")
	writeLines(t, in, `{"id": "p0", "sample": 0, "mode": "direct", "model": "m", "answer": "1", "output": "1", "verdict": "pass", "correct": true}`)
	writeLines(t, bad, `{"something": "else"}`)
	if code, _, errs := runCLI(t, "", "report", "--title", "T", "--out", out, in); code != 0 {
		t.Fatalf("report: %d %s", code, errs)
	}
	if b, err := os.ReadFile(out); err != nil || !strings.Contains(string(b), "100.0%") || !strings.Contains(string(b), "<title>T</title>") {
		t.Errorf("report: %v", err)
	}
	if code, _, errs := runCLI(t, "", "report", "--out", out); code != 2 || !strings.Contains(errs, "at least one file or search directory is required") {
		t.Errorf("no files: %d %s", code, errs)
	}
	if code, _, errs := runCLI(t, "", "report", "--out", out, bad); code != 1 || !strings.Contains(errs, "bad.jsonl:1: not an output of cwm") {
		t.Errorf("unknown file: %d %s", code, errs)
	}
}

// TestEvalObserveCommand predicts the observations of one trajectory with
// a model that echoes "README.md", right on the first.
func TestEvalObserveCommand(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "traj.jsonl"), filepath.Join(dir, "obs.jsonl")
	writeLines(t, in, `{"task_id": "t1", "sample": 0, "exit_reason": "submitted", "messages": [`+
		`{"role": "user", "content": "Fix it."}, {"role": "assistant", "content": "<tool: bash>\nls\n</tool>"}, {"role": "tool", "content": "README.md"},`+
		`{"role": "assistant", "content": "<tool: bash>\ncat x\n</tool>"}, {"role": "tool", "content": "cat: x: No such file or directory"}],`+
		`"steps": [{"turn": 1, "tool": "bash"}, {"turn": 2, "tool": "bash"}]}`)
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply { return modeltest.Text("README.md") }, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	code, stdout, errs := runCLI(t, "", "eval", "observe", "--trajectories", in, "--model", "m", "--base-url", srv.URL, "--out", out, "--quiet")
	if code != 0 || !strings.Contains(stdout, "observe (m): 2 observations predicted") || !strings.Contains(stdout, "bash         2  exact 50.0%  normalised 50.0%") {
		t.Errorf("exit %d: %s %s", code, stdout, errs)
	}
	if code, _, errs := runCLI(t, "", "eval", "observe", "--trajectories", in, "--out", out, "--model", "m", "--base-url", "u", "--api", "x"); code != 2 || !strings.Contains(errs, `--api "x"`) {
		t.Errorf("bad api: %d %s", code, errs)
	}
}

// TestEvalShardsMerge runs cwm eval cruxeval as two shards and joins them
// with cwm merge, which checks each line is in its shard's file.
func TestEvalShardsMerge(t *testing.T) {
	t.Setenv("CWM_HOME", t.TempDir())
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply { return modeltest.Text("assert f(1) == 'x'\n") }, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	var shards []string
	for i := range 2 {
		out := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i))
		code, _, errs := runCLI(t, "", "eval", "cruxeval", "--model", "m", "--base-url", srv.URL, "--limit", "6", "--samples", "2",
			"--out", out, "--shard", fmt.Sprintf("%d/2", i), "--score-workers", "1", "--quiet")
		if code != 0 {
			t.Fatalf("shard %d: %s", i, errs)
		}
		shards = append(shards, out)
	}
	all := filepath.Join(dir, "all.jsonl")
	code, _, errs := runCLI(t, "", append([]string{"merge", "--out", all}, shards...)...)
	if code != 0 {
		t.Fatalf("merge: %d %s", code, errs)
	}
	sum, err := eval.Summarize(all, eval.Direct, nil)
	if err != nil || sum.Samples != 12 || sum.Problems != 6 {
		t.Errorf("merged: %+v %v", sum, err)
	}
}
