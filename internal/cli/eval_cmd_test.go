package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/eval"
	"cwm/internal/model/modeltest"
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
	} {
		code, _, errs := runCLI(t, "", c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, %s; want %d, %q", c.args, code, errs, c.code, c.want)
		}
	}
	code, stdout, _ = runCLI(t, "", "eval", "cruxeval", "--mode", "trace-full", "--show-prompt", "--id", "sample_0")
	if want := "<|begin_of_text|><|trace_context_start|>" + ps[0].TraceContext() + "<|frame_sep|>"; code != 0 || stdout != want {
		t.Errorf("--show-prompt: %d %q", code, stdout)
	}
}
