package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/reward"
	"cwm/internal/sandbox"
	"cwm/internal/selection"
	"cwm/internal/selection/selectiontest"
)

// TestSelectExample runs cwm select on two tasks of the example
// repository: one with the eight candidates (best@k picks the gold
// patch), one where no candidate is correct (nothing is reported
// resolved); then runs it again, which resumes with nothing to do.
func TestSelectExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example environment")
	}
	home := t.TempDir()
	t.Setenv("CWM_HOME", home)
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	e, err := envbuild.Build(context.Background(), env.NewSandboxes(rt), envbuild.Options{Home: home, Source: selectiontest.ExampleRepo(), Runs: 1, NoCoverage: true})
	rt.Close()
	if err != nil {
		t.Fatal(err)
	}
	eight, base := selectiontest.SnakeTask(t, e, "textkit__snake-8")
	none, _ := selectiontest.SnakeTask(t, e, "textkit__snake-none")
	dir := t.TempDir()
	tasksFile, candFile, out := filepath.Join(dir, "tasks.jsonl"), filepath.Join(dir, "cands.jsonl"), filepath.Join(dir, "pred.jsonl")
	writeLines(t, tasksFile, jsonLines(t, eight, none)...)
	// Predictions, the two tasks' lines interleaved.
	a, b := selectiontest.EightCandidates(t, eight, base), selectiontest.WrongCandidates(t, none, base)
	var lines []any
	for i := range a {
		for _, c := range [][]reward.CandidateLine{a, b} {
			if i < len(c) {
				p := c[i].Patch
				lines = append(lines, reward.Prediction{InstanceID: c[i].ID, ModelName: "m", ModelPatch: &p})
			}
		}
	}
	writeLines(t, candFile, jsonLines(t, lines...)...)
	srv := selectiontest.Server(t, selectiontest.ScriptedTests())
	args := []string{"select", "--tasks", tasksFile, "--candidates", candFile, "--out", out, "--model", "fake",
		"--base-url", srv.URL, "--tests", "12", "--keep", "5", "--concurrency", "2", "--json", "--quiet"}
	code, stdout, stderr := runCLI(t, "", args...)
	if code != 0 {
		t.Fatalf("cwm select = %d\n%s\n%s", code, stdout, stderr)
	}
	var sum selection.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout)
	}
	if sum.Tasks != 2 || sum.Graded != 2 || sum.ResolvedRate == nil || *sum.ResolvedRate != 0.5 {
		t.Errorf("summary: %d tasks, %d graded, resolved rate %v; want 2, 2, 0.5", sum.Tasks, sum.Graded, ptrStr(sum.ResolvedRate))
	}
	if n := len(sum.Curve); n != 4 || sum.Curve[3].K != 8 || sum.Curve[3].Pass != 1 || sum.Curve[3].Best != 1 || sum.Curve[3].Majority != 0 {
		t.Errorf("summary curve %+v; want k = 1, 2, 4, 8, and at 8 (the eight-candidate task alone) pass 1, best 1, majority 0", sum.Curve)
	}

	got := map[string]selection.Line{}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var x selection.Line
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Fatal(err)
		}
		got[x.InstanceID] = x
	}
	// majority@k: the wrong patch candidates 3 and 5 share word for word;
	// of the two, the first in CWM's shuffle seeded with the name is 5.
	if l := got["textkit__snake-8"]; l.ModelPatch != eight.Patch || l.ModelName != "cwm-select-best" || l.Resolved == nil || !*l.Resolved || l.Majority != 5 {
		t.Errorf("eight-candidate line: winner %v majority %v resolved %v name %q; want the gold patch, majority 5, resolved", l.Winner, l.Majority, ptrStr(l.Resolved), l.ModelName)
	}
	l := got["textkit__snake-none"]
	if l.Result == nil || l.Resolved == nil || *l.Resolved {
		t.Fatalf("no-correct line: resolved %v, want false", l.Result)
	}
	for _, c := range l.Candidates {
		if c.Resolved == nil || *c.Resolved {
			t.Errorf("no-correct candidate %d resolved %v, want false", c.Index, ptrStr(c.Resolved))
		}
	}
	for _, p := range l.Curve {
		if p.Pass != 0 || p.Best != 0 || p.Majority != 0 {
			t.Errorf("no-correct curve at k=%d: %+v, want all 0", p.K, p)
		}
	}
	var tf selection.TestsFile
	raw, err := os.ReadFile(filepath.Join(dir, l.TestsFile))
	if err != nil || json.Unmarshal(raw, &tf) != nil || len(tf.Tests) != 12 || !strings.Contains(tf.Prompt, "parse_http_response") {
		t.Errorf("tests file %s: %v, %d tests; want the 12 tests and the prompt", l.TestsFile, err, len(tf.Tests))
	}

	// Resumed: nothing left, the same summary.
	code, stdout, stderr = runCLI(t, "", args...)
	var again selection.Summary
	if code != 0 || json.Unmarshal([]byte(stdout), &again) != nil || again.Tasks != 2 || again.Counts != sum.Counts {
		t.Errorf("second run = %d, summary %s %s; want the same summary and no work", code, stdout, stderr)
	}
	if data2, _ := os.ReadFile(out); string(data2) != string(data) {
		t.Errorf("second run changed %s", out)
	}
}

// jsonLines is vs, one JSON line each.
func jsonLines(t *testing.T, vs ...any) []string {
	t.Helper()
	var out []string
	for _, v := range vs {
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(j))
	}
	return out
}
