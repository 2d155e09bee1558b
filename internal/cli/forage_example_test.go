package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/agent"
	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/model/modeltest"
	"cwm/internal/sandbox"
	"cwm/internal/task"
	"cwm/internal/trajectory"
)

// The bug of the example task: snake_case joins with "-" (a mutation of
// the operators kind CWM's mutate-fix data uses).
const (
	snakeBug = `diff --git a/textkit/case.py b/textkit/case.py
--- a/textkit/case.py
+++ b/textkit/case.py
@@ -18,7 +18,7 @@ def _parts(name):
 def snake_case(name):
     """Convert an identifier to snake_case: "parseHTTPResponse" -> "parse_http_response"."""
     parts = _parts(name)
-    return "_".join(parts)
+    return "-".join(parts)
 
 
 def kebab_case(name):
`
	snakeGold = `diff --git a/textkit/case.py b/textkit/case.py
--- a/textkit/case.py
+++ b/textkit/case.py
@@ -18,7 +18,7 @@ def _parts(name):
 def snake_case(name):
     """Convert an identifier to snake_case: "parseHTTPResponse" -> "parse_http_response"."""
     parts = _parts(name)
-    return "-".join(parts)
+    return "_".join(parts)
 
 
 def kebab_case(name):
`
	snakeSearch = `    """Convert an identifier to snake_case: "parseHTTPResponse" -> "parse_http_response"."""
    parts = _parts(name)
    return "-".join(parts)`
)

// TestForageExampleTask runs graded episodes on a mutate-fix task of the
// example repository: one that fixes the bug (resolved, reward 1) and one
// that submits a wrong patch (not resolved, similarity computed).
func TestForageExampleTask(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example environment")
	}
	home := t.TempDir()
	t.Setenv("CWM_HOME", home)
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	env, err := envbuild.Build(context.Background(), env.NewSandboxes(rt), envbuild.Options{Home: home, Source: "../../examples/textkit", Runs: 1, NoCoverage: true})
	rt.Close()
	if err != nil {
		t.Fatal(err)
	}
	var f2p, p2p []string
	for _, id := range env.Passing() {
		switch {
		case strings.Contains(id, "test_snake_and_kebab"):
			f2p = append(f2p, id)
		case strings.HasPrefix(id, "tests/test_case.py"):
			p2p = append(p2p, id)
		}
	}
	if len(f2p) == 0 || len(p2p) == 0 {
		t.Fatalf("no snake_case tests among %d passing tests", len(env.Passing()))
	}
	var lines []string
	for _, id := range []string{"textkit__snake-fixed", "textkit__snake-wrong"} {
		tk := task.Task{InstanceID: id, Repo: "textkit", BaseCommit: env.Commit, Patch: snakeGold, BugPatch: snakeBug,
			ProblemStatement: "snake_case('parseHTTPResponse') returns 'parse-http-response' (" + id + ")",
			FailToPass:       f2p, PassToPass: p2p, EnvID: env.ID, Kind: "mutate"}
		b, _ := json.Marshal(tk)
		lines = append(lines, string(b))
	}
	tasksFile := filepath.Join(t.TempDir(), "tasks.jsonl")
	os.WriteFile(tasksFile, []byte(strings.Join(lines, "\n")+"\n"), 0o644)

	fix := []modeltest.Reply{
		modeltest.Tool("bash", "python -m pytest -q tests/test_case.py 2>&1 | tail -1"),
		modeltest.Tool("edit", "textkit/case.py\n<<<<<<< SEARCH\n"+snakeSearch+"\n=======\n"+strings.Replace(snakeSearch, `"-"`, `"_"`, 1)+"\n>>>>>>> REPLACE"),
		modeltest.Tool("bash", "git diff > /tmp/fix.patch"),
		modeltest.Tool("submit", "/tmp/fix.patch"),
		modeltest.Text("## Issue Summary\nsnake_case joined with the wrong separator."),
	}
	wrong := []modeltest.Reply{
		modeltest.Tool("edit", "textkit/case.py\n<<<<<<< SEARCH\n"+snakeSearch+"\n=======\n"+strings.Replace(snakeSearch, `"-".join(parts)`, `"-".join(parts).replace("-", "__")`, 1)+"\n>>>>>>> REPLACE"),
		modeltest.Tool("bash", "git diff > /tmp/fix.patch"),
		modeltest.Tool("submit", "/tmp/fix.patch"),
		modeltest.Text("## Issue Summary\nDone."),
	}
	srv, err := modeltest.Start(modeltest.ByIssue(map[string][]modeltest.Reply{
		"textkit__snake-fixed": fix, "textkit__snake-wrong": wrong}, modeltest.Text("?")), false)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "traj.jsonl")
	code, stdout, stderr := runCLI(t, "", "forage", "--tasks", tasksFile, "--out", out, "--model", "fake",
		"--base-url", srv.URL, "--concurrency", "2", "--json", "--quiet")
	if code != 0 {
		t.Fatalf("cwm forage = %d\n%s\n%s", code, stdout, stderr)
	}
	trs := map[string]trajectory.Trajectory{}
	for _, tr := range readTrajectories(t, out) {
		trs[tr.TaskID] = tr
	}
	fixed, bad := trs["textkit__snake-fixed"], trs["textkit__snake-wrong"]
	if fixed.ExitReason != trajectory.ExitSubmitted || fixed.Resolved == nil || !*fixed.Resolved || fixed.Reward == nil || *fixed.Reward != 1 {
		t.Errorf("fixing episode: exit %q resolved %v reward %v; want submitted, resolved, reward 1", fixed.ExitReason, ptrStr(fixed.Resolved), ptrStr(fixed.Reward))
	}
	if fixed.Similarity == nil || *fixed.Similarity != 1 {
		t.Errorf("fixing episode similarity %v, want 1 (its patch is the gold patch)", ptrStr(fixed.Similarity))
	}
	if bad.Resolved == nil || *bad.Resolved || bad.Similarity == nil || *bad.Similarity <= 0 || *bad.Similarity >= 1 || bad.Reward == nil {
		t.Fatalf("wrong-patch episode: resolved %v similarity %v reward %v; want not resolved with a similarity in (0,1)", ptrStr(bad.Resolved), ptrStr(bad.Similarity), ptrStr(bad.Reward))
	}
	if want := map[bool]float64{true: 0, false: -1}[*bad.Similarity >= 0.5]; *bad.Reward != want {
		t.Errorf("wrong-patch reward %v with similarity %v, want %v (CWM-SPEC 2.3 with threshold 0.5)", *bad.Reward, *bad.Similarity, want)
	}
	var sum agent.ForageSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.ResolvedRate == nil || *sum.ResolvedRate != 0.5 {
		t.Errorf("summary resolved rate %v (%v), want 0.5", sum.ResolvedRate, err)
	}
}

func ptrStr[T any](p *T) any {
	if p == nil {
		return "<nil>"
	}
	return *p
}
