package report

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"cwm/internal/eval"
	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/trajectory"
)

func writeJSONL(t *testing.T, path string, lines ...any) {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		data, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// knownInputs makes eval outputs whose numbers are known by running the
// evals against a scripted model: CruxEval's first 10 problems, direct
// right on 7 (pass@1 70.0%, ± 29.9) and trace-final on 9 (90.0%), scored
// in the sandbox; a halting run right on 2 of 4 (50.0%), its diverging
// program confirmed by running 5 s; whole-trace predictions of the two
// testdata traces written exactly (100%); three observations (bash exact
// and right but for a timing, edit "abce" for "abcd": similarity bash
// 1.000, all 0.917); and three trajectories written as forage writes them
// (2 resolved, rewards 1, -1, 1; turns 3, 5, 3).
func knownInputs(t *testing.T, dir string) []string {
	t.Helper()
	replies := map[string]string{}
	ps := eval.CruxEval()[:10]
	for i, p := range ps {
		d, _ := eval.BuildPrompt(eval.Direct, eval.Completions, &p)
		f, _ := eval.BuildPrompt(eval.TraceFinal, eval.Completions, &p)
		replies[d.Text] = fmt.Sprintf("assert f(%s) == 'x'\n", p.Input)
		replies[f.Text] = "a value<|frame_sep|>"
		if i < 7 {
			replies[d.Text] = fmt.Sprintf("assert f(%s) == %s\n", p.Input, p.Output)
		}
		if i < 9 {
			b, _ := json.Marshal(p.Output)
			replies[f.Text] = string(b) + "<|frame_sep|>"
		}
	}
	progs := []eval.HaltProgram{
		{ID: "a", Code: "x = 1\n", Label: eval.Terminates}, {ID: "b", Code: "x = 2\n", Label: eval.Terminates},
		{ID: "c", Code: "while True:\n    pass\n", Label: eval.Diverges}, {ID: "d", Code: "while 1:\n    pass\n", Label: eval.Diverges},
	}
	for i, p := range progs {
		pr, _ := eval.BuildHaltPrompt(eval.Direct, eval.Completions, &p, eval.Think{})
		replies[pr.Text] = []string{"terminates", "diverges", "diverges", "no idea"}[i]
	}
	recs, _, err := eval.LoadTraces("testdata/traces.jsonl")
	if err != nil || len(recs) != 2 {
		t.Fatalf("testdata traces: %v", err)
	}
	for _, r := range recs {
		var b strings.Builder
		for _, f := range r.Frames {
			b.WriteString(string(appendFrame(f)))
		}
		replies[eval.TracePrompt(&r, 0)] = b.String()
	}
	tr := &trajectory.Trajectory{TaskID: "t1", Messages: []model.Message{{Role: "user", Content: "Fix it."},
		{Role: "assistant", Content: "<tool: bash>\nls\n</tool>"}, {Role: "tool", Content: "README.md"},
		{Role: "assistant", Content: "<tool: bash>\npytest\n</tool>"}, {Role: "tool", Content: "1 passed in 0.31s"},
		{Role: "assistant", Content: "<tool: edit>\nx\n</tool>"}, {Role: "tool", Content: "abcd"}},
		Steps: []trajectory.Step{{Turn: 1, Tool: "bash"}, {Turn: 2, Tool: "bash"}, {Turn: 3, Tool: "edit"}}}
	obs := eval.Observations(tr)
	for i := range obs {
		replies[eval.BuildObservePrompt(eval.Completions, &obs[i]).Text] = []string{"README.md", "1 passed in 0.77s", "abce"}[i]
	}
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		rep, ok := replies[r.Prompt]
		if !ok {
			return modeltest.Reply{Status: 400, Error: "unscripted"}
		}
		return modeltest.Text(rep)
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	client, err := model.NewClient(model.ClientConfig{BaseURL: srv.URL, Model: "oracle", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	scorer, err := eval.NewScorer(ctx, testRT, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer scorer.Close()
	runner, err := eval.NewScorer(ctx, testRT, 1, eval.HaltTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer runner.Close()
	path := func(name string) string { return filepath.Join(dir, name) }
	for _, m := range []eval.Mode{eval.Direct, eval.TraceFinal} {
		if _, err := eval.Run(ctx, eval.Options{Problems: ps, Mode: m, API: eval.Completions, Client: client, Checker: scorer,
			Out: path(string(m) + ".jsonl"), Concurrency: 4}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := eval.RunHalt(ctx, eval.HaltOptions{Programs: progs, Mode: eval.Direct, API: eval.Completions, Client: client,
		Runner: runner, Out: path("halt.jsonl"), Concurrency: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := eval.RunFidelity(ctx, eval.FidelityOptions{Traces: recs, Full: true, Client: client, Out: path("fidelity.jsonl"), Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := eval.RunObserve(ctx, eval.ObserveOptions{Observations: obs, API: eval.Completions, Client: client,
		Out: path("observe.jsonl"), Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	r1, rm1 := 1.0, -1.0
	yes, no := true, false
	traj := func(id string, turns int, reward *float64, resolved *bool) map[string]any {
		return map[string]any{"task_id": id, "sample": 0, "exit_reason": "submitted", "turns": turns, "reward": reward, "resolved": resolved,
			"messages": []map[string]string{{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "Fix the bug."},
				{"role": "assistant", "content": "<tool: bash>\nls\n</tool>"}}}
	}
	writeJSONL(t, path("traj.jsonl"), traj("t1", 3, &r1, &yes), traj("t2", 5, &rm1, &no), traj("t3", 3, &r1, &yes))
	var paths []string
	for _, name := range []string{"direct.jsonl", "trace-final.jsonl", "halt.jsonl", "fidelity.jsonl", "traj.jsonl", "observe.jsonl"} {
		paths = append(paths, path(name))
	}
	return append(paths, "testdata/traces.jsonl")
}

// inputs are knownInputs, made once for the tests that read them.
var inputs struct {
	once  sync.Once
	dir   string
	paths []string
}

func sharedInputs(t *testing.T) (dir string, paths []string) {
	t.Helper()
	inputs.once.Do(func() {
		d, err := os.MkdirTemp(testHome, "inputs-")
		if err != nil {
			t.Fatal(err)
		}
		inputs.dir, inputs.paths = d, knownInputs(t, d)
	})
	if inputs.paths == nil {
		t.Fatal("the known inputs could not be made (see the first test that tried)")
	}
	return inputs.dir, inputs.paths
}

func TestDetect(t *testing.T) {
	dir := t.TempDir()
	_, paths := sharedInputs(t)
	want := []Kind{KindCruxEval, KindCruxEval, KindHalt, KindFidelity, KindTrajectories, KindObserve, KindTraces}
	for i, p := range paths {
		if k, err := Detect(p); err != nil || k != want[i] {
			t.Errorf("%s: %s %v, want %s", p, k, err, want[i])
		}
	}
	bad := filepath.Join(dir, "bad.jsonl")
	writeJSONL(t, bad, map[string]int{"x": 1})
	if _, err := Detect(bad); err == nil || !strings.Contains(err.Error(), "bad.jsonl:1: not an output of cwm") {
		t.Errorf("unknown file: %v", err)
	}
}

// TestReportInBrowser renders a report of known numbers and reads it back
// through headless Chromium: the numbers as rendered, each plot's marks,
// no console errors, and the trace viewer stepped to a frame showing its
// locals.
func TestReportInBrowser(t *testing.T) {
	dir := t.TempDir()
	_, paths := sharedInputs(t)
	r, err := Build("known numbers", paths)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report.html")
	if err := WriteFile(out, r); err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(out)
	for _, s := range []string{"http://", "https://", "<link", " src="} {
		if strings.Contains(string(html), s) {
			t.Errorf("the page refers to the network or another file: %q", s)
		}
	}
	b := startBrowser(t)
	b.open(t, out)
	var text string
	b.eval(t, "document.body.innerText", &text)
	for _, want := range []string{"70.0%", "± 29.9", "90.0%", "trace-final", "Halting", "50.0%",
		"2 of 3 resolved", "strict format", "100.0%", "1.000", "0.917"} {
		if !strings.Contains(text, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	kinds := len(r.Fid[0].Summary.ByKind)
	if kinds != 3 || r.Halt[0].Summary.Correct != 2 || r.Crux[0].Summary.Correct != 7 || r.Crux[1].Summary.Correct != 9 {
		t.Errorf("fidelity has %d value kinds, want 3 (int, str, container)", kinds)
	}
	for chart, want := range map[string]int{
		`svg[data-chart="cruxeval-pass1"] rect.mark`:    2,
		`svg[data-chart="cruxeval-pass1"] line.ci`:      2,
		`svg[data-chart="halt-confusion-0"] rect.mark`:  6,
		`svg[data-chart="fidelity-decile-0"] rect.mark`: 10,
		`svg[data-chart="fidelity-kind-0"] rect.mark`:   3,
		`svg[data-chart="rewards-0"] rect.mark`:         2,
		`svg[data-chart="turns-0"] rect.mark`:           2,
	} {
		var n int
		b.eval(t, fmt.Sprintf("document.querySelectorAll(%q).length", chart), &n)
		if n != want {
			t.Errorf("%s: %d marks, want %d", chart, n, want)
		}
	}
	// The paper's trace, stepped from frame 1 to frame 9: y = 2 after the
	// second pass, i = 1, on the line of the for.
	var view struct {
		Pos, Locals, Current, Event string
	}
	b.eval(t, `(function () {
		for (let i = 0; i < 8; i++) document.getElementById("trace-next").click();
		return {pos: document.getElementById("trace-pos").innerText,
			locals: document.getElementById("trace-locals").innerText,
			current: document.querySelector("#trace-source .current").innerText,
			event: document.getElementById("trace-event").innerText};
	})()`, &view)
	if view.Pos != "frame 9 of 14" || !strings.Contains(view.Locals, "y\t2") || !strings.Contains(view.Locals, "i\t1") ||
		!strings.Contains(view.Locals, "a\t1") || strings.TrimSpace(view.Current) != "for i in range(b):" || !strings.HasPrefix(view.Event, "line at line 3") {
		t.Errorf("trace viewer at frame 9: %+v", view)
	}
	var role string
	b.eval(t, `(function () { document.getElementById("traj-next").click(); document.getElementById("traj-next").click();
		return document.getElementById("traj-role").innerText + " " + document.getElementById("traj-pos").innerText; })()`, &role)
	if role != "assistant message 3 of 3, reward 1" {
		t.Errorf("trajectory viewer: %q", role)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}
