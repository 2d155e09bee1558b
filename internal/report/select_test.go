package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/passk"
	"cwm/internal/selection"
)

// selectInputs writes a `cwm select` output whose numbers are known. The
// lines are selection.Line values (the type `cwm select` writes), made by
// hand: a real run needs the example environment built and sandboxes for
// every class, which the selection's own tests do. Three tasks:
//
//   - a: method hybrid, 8 candidates of which 4 are resolved; winner #2
//     (resolved), curves at k = 1, 2, 4, 8 with hybrid;
//   - b: method best, 4 candidates of which 2 are resolved; winner #1 (not
//     resolved), curves at k = 1, 2, 4;
//   - c: method best, every candidate empty: no winner, no curve.
//
// pass@k is passk.Estimate over the candidates. The mean curve:
// pass@k 50.0%, 81.0%, 99.3%, 100.0%; majority@k 50.0%, 45.0%, 60.0%,
// 0.0%; best@k 50.0%, 75.0%, 95.0%, 100.0%; hybrid (task a only) 50.0%,
// 72.0%, 96.0%, 100.0%.
func selectInputs(t *testing.T, path string) {
	t.Helper()
	yes, no := true, false
	f := func(x float64) *float64 { return &x }
	score := func(n int) *int { return &n }
	cands := func(n int, resolved []bool, scores []int) []selection.CandidateResult {
		var out []selection.CandidateResult
		for i := range n {
			c := selection.CandidateResult{Index: i, Sample: i, Tokens: 100, Class: i, Votes: 1}
			if scores != nil {
				g := scores[i] - 20
				c.Scored = &selection.Scored{Generated: g, Regression: score(20), Score: score(scores[i])}
			}
			if resolved != nil {
				c.Resolved = &no
				if resolved[i] {
					c.Resolved = &yes
				}
			}
			out = append(out, c)
		}
		return out
	}
	curve := func(n, c int, ks []int, maj, best []float64, hyb []float64) []selection.Point {
		var out []selection.Point
		for i, k := range ks {
			p := selection.Point{K: k, Pass: passk.Estimate(n, c, k), Majority: maj[i], Best: best[i], Subsets: 32}
			if hyb != nil {
				p.Hybrid = f(hyb[i])
			}
			out = append(out, p)
		}
		return out
	}
	hybridPick := 2
	a := &selection.Result{Method: selection.MethodHybrid, Winner: 2, Best: 2, Majority: 0, Hybrid: &hybridPick,
		Why: "25 tests passed (5 generated, 20 regression), tied with 1 other patches; most votes (1)", Classes: 8,
		Candidates: cands(8, []bool{true, false, true, false, true, false, true, false}, []int{24, 21, 25, 22, 25, 20, 23, 21}),
		Kept:       []int{0, 1, 2, 3, 4}, Reproducing: 7, Irrelevant: 1, Broken: 4, Resolved: &yes,
		Curve: curve(8, 4, []int{1, 2, 4, 8}, []float64{0.5, 0.4, 0.2, 0}, []float64{0.5, 0.7, 0.9, 1}, []float64{0.5, 0.72, 0.96, 1})}
	b := &selection.Result{Method: selection.MethodBest, Winner: 1, Best: 1, Majority: 1,
		Why: "most tests passed: 23 tests passed (3 generated, 20 regression); the next best passed 22", Classes: 4,
		Candidates: cands(4, []bool{true, false, true, false}, []int{22, 23, 21, 20}),
		Kept:       []int{0, 1, 2}, Reproducing: 3, Broken: 2, Resolved: &no,
		Curve: curve(4, 2, []int{1, 2, 4}, []float64{0.5, 0.5, 1}, []float64{0.5, 0.8, 1}, nil)}
	c := &selection.Result{Method: selection.MethodBest, Winner: -1, Best: -1, Majority: -1, Why: "every patch is empty",
		Candidates: []selection.CandidateResult{{Index: 0, Empty: true, Class: -1}, {Index: 1, Empty: true, Class: -1}}, Resolved: &no}
	writeJSONL(t, path,
		selection.Line{InstanceID: "a", ModelName: "cwm-select-hybrid", ModelPatch: "diff --git a/x b/x\n", Result: a, TestsFile: "pred.jsonl.tests/a.json"},
		selection.Line{InstanceID: "b", ModelName: "cwm-select-best", ModelPatch: "diff --git a/y b/y\n", Result: b, TestsFile: "pred.jsonl.tests/b.json"},
		selection.Line{InstanceID: "c", ModelName: "cwm-select-best", Result: c, TestsFile: "pred.jsonl.tests/c.json"})
}

// TestSelectReportInBrowser renders a report of a select output of known
// numbers and reads it back through headless Chromium: the curve table's
// means, the plot's marks (one circle per method and k, one line per
// method), the per-task table, and no console errors.
func TestSelectReportInBrowser(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "pred.jsonl")
	selectInputs(t, in)
	if k, err := Detect(in); err != nil || k != KindSelect {
		t.Fatalf("detect: %s %v, want %s", k, err, KindSelect)
	}
	r, err := Build("selection", []string{in})
	if err != nil {
		t.Fatal(err)
	}
	if r.Inputs[0].Lines != 3 || len(r.Select) != 1 || len(r.Select[0].Curve) != 4 {
		t.Fatalf("inputs %+v, sections %d", r.Inputs, len(r.Select))
	}
	out := filepath.Join(dir, "report.html")
	if err := WriteFile(out, r); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t)
	b.open(t, out)
	var text string
	b.eval(t, "document.body.innerText", &text)
	for _, want := range []string{"Test-time selection", "method best,hybrid, 3 tasks, 1 of 3 picks resolved, 1 with no patch to pick"} {
		if !strings.Contains(text, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	var curve [][]string
	b.eval(t, `[...document.querySelectorAll("table.select-curve tr")].map(r => [...r.cells].map(c => c.innerText))`, &curve)
	want := [][]string{
		{"k", "pass@k", "majority@k", "best@k", "hybrid@k", "subsets"},
		{"1", "50.0%", "50.0%", "50.0%", "50.0%", "32"},
		{"2", "81.0%", "45.0%", "75.0%", "72.0%", "32"},
		{"4", "99.3%", "60.0%", "95.0%", "96.0%", "32"},
		{"8", "100.0%", "0.0%", "100.0%", "100.0%", "32"},
	}
	if fmt.Sprint(curve) != fmt.Sprint(want) {
		t.Errorf("curve table\n%v\nwant\n%v", curve, want)
	}
	for sel, want := range map[string]int{
		`svg[data-chart="select-curve-0"] circle.mark`:     16, // 4 methods at k = 1, 2, 4, 8
		`svg[data-chart="select-curve-0"] polyline.series`: 4,
		`svg[data-chart="select-curve-0"] circle.mark.s2`:  4,
		`svg[data-chart="select-curve-0"] text.legend`:     4,
	} {
		var n int
		b.eval(t, fmt.Sprintf("document.querySelectorAll(%q).length", sel), &n)
		if n != want {
			t.Errorf("%s: %d, want %d", sel, n, want)
		}
	}
	// best@k's marks, left to right: x grows by equal steps (log2 of k),
	// and y is the rate (100% at the top).
	var best [][2]float64
	b.eval(t, `[...document.querySelectorAll('svg[data-chart="select-curve-0"] circle.mark.s2')].map(c => [+c.getAttribute("cx"), +c.getAttribute("cy")])`, &best)
	if len(best) == 4 {
		d1, d2, d3 := best[1][0]-best[0][0], best[2][0]-best[1][0], best[3][0]-best[2][0]
		if d1 <= 0 || d1-d2 > 0.2 || d2-d1 > 0.2 || d3-d1 > 0.2 || d1-d3 > 0.2 {
			t.Errorf("best@k's x are not log2-spaced: %v", best)
		}
		if !(best[0][1] > best[1][1] && best[1][1] > best[2][1] && best[2][1] > best[3][1]) {
			t.Errorf("best@k's y do not rise with the rate: %v", best)
		}
	}
	var rows [][]string
	b.eval(t, `[...document.querySelectorAll("table.select-tasks tr")].slice(1).map(r => [...r.cells].map(c => c.textContent))`, &rows)
	wantRows := [][]string{
		{"a", "hybrid", "#2", "yes", "25 tests passed (5 generated, 20 regression), tied with 1 other patches; most votes (1)",
			"#0 24 ✓, #1 21, #2 25 ✓, #3 22, #4 25 ✓, #5 20, #6 23 ✓, #7 21", "8", "8", "5", "7", "5"},
		{"b", "best", "#1", "no", "most tests passed: 23 tests passed (3 generated, 20 regression); the next best passed 22",
			"#0 22 ✓, #1 23, #2 21 ✓, #3 20", "4", "4", "3", "3", "2"},
		{"c", "best", "none", "no", "every patch is empty", "#0 -, #1 -", "2", "0", "0", "0", "0"},
	}
	if fmt.Sprint(rows) != fmt.Sprint(wantRows) {
		t.Errorf("task table\n%q\nwant\n%q", rows, wantRows)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
	html, _ := os.ReadFile(out)
	if strings.Contains(string(html), "http://") {
		t.Error("the page refers to the network")
	}
}
