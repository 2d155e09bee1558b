package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/eval"
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

// knownInputs writes eval outputs whose numbers are known: direct 7 of
// 10 right (pass@1 70.0%, ± 29.9), trace-full 9 of 10 (90.0%), a halting
// run 2 of 4 (50.0%), whole-trace predictions of the two testdata traces
// written exactly (100%), and three trajectories (2 resolved, rewards
// 1, -1, 1; turns 3, 5, 3), and three observations (bash similarity
// 0.950, all 0.717).
func knownInputs(t *testing.T, dir string) []string {
	t.Helper()
	var direct, full []any
	for i := range 10 {
		id := fmt.Sprintf("p%d", i)
		direct = append(direct, eval.Line{ID: id, Mode: eval.Direct, Model: "oracle", Answer: "1", Output: "1",
			Verdict: map[bool]eval.Verdict{true: eval.Pass, false: eval.Fail}[i < 7], Correct: i < 7, CompletionTokens: 5})
		full = append(full, eval.Line{ID: id, Mode: eval.TraceFull, Model: "oracle", Answer: "1", Output: "1",
			Verdict: map[bool]eval.Verdict{true: eval.Pass, false: eval.FormatError}[i < 9], Correct: i < 9, CompletionTokens: 200})
	}
	halt := []any{
		eval.HaltLine{ID: "a", Mode: eval.Direct, Model: "oracle", Label: eval.Terminates, Answer: eval.Terminates, Correct: true},
		eval.HaltLine{ID: "b", Mode: eval.Direct, Model: "oracle", Label: eval.Terminates, Answer: eval.Diverges},
		eval.HaltLine{ID: "c", Mode: eval.Direct, Model: "oracle", Label: eval.Diverges, Answer: eval.Diverges, Ran: "timeout", Correct: true},
		eval.HaltLine{ID: "d", Mode: eval.Direct, Model: "oracle", Label: eval.Diverges, Answer: ""},
	}
	recs, _, err := eval.LoadTraces("testdata/traces.jsonl")
	if err != nil || len(recs) != 2 {
		t.Fatalf("testdata traces: %v", err)
	}
	var fid []any
	for _, r := range recs {
		var b strings.Builder
		for _, f := range r.Frames {
			b.WriteString(string(appendFrame(f)))
		}
		l := eval.ScoreFull(&r, b.String())
		l.Model = "oracle"
		fid = append(fid, l)
	}
	r1, rm1 := 1.0, -1.0
	yes, no := true, false
	traj := func(id string, turns int, reward *float64, resolved *bool) map[string]any {
		return map[string]any{"task_id": id, "sample": 0, "exit_reason": "submitted", "turns": turns, "reward": reward, "resolved": resolved,
			"messages": []map[string]string{{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "Fix the bug."},
				{"role": "assistant", "content": "<tool: bash>\nls\n</tool>"}}}
	}
	obs := []any{
		eval.ObserveLine{ID: "t1#0", Message: 2, Tool: "bash", Model: "oracle", Exact: true, Normalized: true, Similarity: 1},
		eval.ObserveLine{ID: "t1#0", Message: 4, Tool: "bash", Model: "oracle", Normalized: true, Similarity: 0.9},
		eval.ObserveLine{ID: "t1#0", Message: 6, Tool: "edit", Model: "oracle", Similarity: 0.25},
	}
	files := map[string][]any{
		"observe.jsonl": obs,
		"direct.jsonl":  direct, "full.jsonl": full, "halt.jsonl": halt, "fidelity.jsonl": fid,
		"traj.jsonl": {traj("t1", 3, &r1, &yes), traj("t2", 5, &rm1, &no), traj("t3", 3, &r1, &yes)},
	}
	var paths []string
	for _, name := range []string{"direct.jsonl", "full.jsonl", "halt.jsonl", "fidelity.jsonl", "traj.jsonl", "observe.jsonl"} {
		p := filepath.Join(dir, name)
		writeJSONL(t, p, files[name]...)
		paths = append(paths, p)
	}
	return append(paths, "testdata/traces.jsonl")
}

func TestDetect(t *testing.T) {
	dir := t.TempDir()
	paths := knownInputs(t, dir)
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
	r, err := Build("known numbers", knownInputs(t, dir))
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
	for _, want := range []string{"70.0%", "± 29.9", "90.0%", "trace-full", "Halting", "50.0%",
		"2 of 3 resolved", "strict format", "100.0%", "0.950", "0.717"} {
		if !strings.Contains(text, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	kinds := len(r.Fid[0].Summary.ByKind)
	if kinds != 3 {
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
