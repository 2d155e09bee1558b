package tasks

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/jsonl"
	"cwm/internal/mutate"
	"cwm/internal/task"
)

// TestMutateTextkit is the demo: at least 30 verified tasks from the
// example repository, covering all five families, each of which holds
// when re-validated, three times in a row. CWM-SPEC section 3:
// "Mutate-fix: start from a repository whose tests pass; take functions
// covered by those tests; apply one of five mutation families [...] A
// mutation must parse, and must make the associated tests fail."
func TestMutateTextkit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and mutates the example repository")
	}
	e := textkitEnv(t)
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "tasks.jsonl")
	opts := MutateOptions{Out: out, Max: 32, PerFunction: 2, Seed: 1, Workers: 2, TimeoutFactor: timeoutFactor(3)}
	sum, err := Mutate(ctx, testSandboxes, e, opts)
	if err != nil {
		t.Fatalf("Mutate: %v", err)
	}
	var b strings.Builder
	sum.Write(&b)
	t.Logf("summary:\n%s", b.String())
	tasks, err := task.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) < 30 {
		t.Fatalf("Mutate wrote %d tasks, want at least 30", len(tasks))
	}
	families := map[string]int{}
	perFn := map[string]int{}
	status := map[string]string{}
	for _, b := range e.Baseline {
		status[b.ID] = b.Status
	}
	lineRef := regexp.MustCompile(`\.py:\d+|line \d+`)
	for _, tk := range tasks {
		families[tk.Family]++
		perFn[tk.File+"::"+tk.Function]++
		if len(tk.FailToPass) == 0 {
			t.Errorf("%s: FAIL_TO_PASS is empty", tk.InstanceID)
		}
		for _, id := range append(append([]string{}, tk.FailToPass...), tk.PassToPass...) {
			if status[id] != "pass" {
				t.Errorf("%s: %s is in a list but its baseline status is %q (flaky tests belong in neither)", tk.InstanceID, id, status[id])
			}
		}
		if tk.Kind != "mutate" || tk.EnvID != e.ID || tk.BaseCommit != e.Commit || tk.TestPatch != "" || tk.Validation == nil {
			t.Errorf("%s: kind %q env %q base %q test_patch %q validation %v", tk.InstanceID, tk.Kind, tk.EnvID, tk.BaseCommit, tk.TestPatch, tk.Validation)
		}
		if !strings.HasPrefix(tk.InstanceID, "textkit__"+tk.Family+"-") {
			t.Errorf("instance id %q, want textkit__%s-HASH", tk.InstanceID, tk.Family)
		}
		ps := tk.ProblemStatement
		if strings.Contains(ps, tk.File) || lineRef.MatchString(ps) || !strings.Contains(ps, tk.FailToPass[0]) {
			t.Errorf("%s: the problem statement names the source or misses the failing test:\n%s", tk.InstanceID, ps)
		}
	}
	for _, f := range mutate.Families {
		if families[f] == 0 {
			t.Errorf("no task of family %s (families: %v)", f, families)
		}
	}
	for fn, n := range perFn {
		if n > opts.PerFunction {
			t.Errorf("%s has %d tasks, over --per-function %d", fn, n, opts.PerFunction)
		}
	}
	checkPatchesApply(t, e, tasks)

	for i := 1; i <= 3; i++ {
		verdicts, err := Validate(ctx, testSandboxes, tasks, ValidateOptions{Store: env.NewStore(testHome), Workers: 2, TimeoutFactor: timeoutFactor(3)})
		if err != nil {
			t.Fatalf("Validate (pass %d): %v", i, err)
		}
		for _, v := range verdicts {
			if !v.OK {
				t.Errorf("validate pass %d: %s does not hold: %s", i, v.InstanceID, v.Problem)
			}
		}
	}

	// Resuming: the same --max finds the work done; two more tasks come
	// from candidates not decided yet, with no duplicate (task.Load
	// rejects duplicate ids).
	again, err := Mutate(ctx, testSandboxes, e, opts)
	if err != nil || again.Written != 0 || again.Existing != len(tasks) {
		t.Errorf("re-run with the same --max: err %v, wrote %d, existing %d; want nothing new", err, again.Written, again.Existing)
	}
	opts.Max = len(tasks) + 2
	more, err := Mutate(ctx, testSandboxes, e, opts)
	if err != nil {
		t.Fatal(err)
	}
	all, err := task.Load(out)
	if err != nil {
		t.Fatalf("after resuming: %v", err)
	}
	if more.Written != 2 || len(all) != len(tasks)+2 || more.Resumed == 0 {
		t.Errorf("resume with --max %d: wrote %d (resumed %d), file has %d tasks; want 2 more", opts.Max, more.Written, more.Resumed, len(all))
	}
}

// checkPatchesApply checks, with git on a clone of the environment's
// repository, that every bug_patch applies to the environment's revision
// and that patch then applies with git apply and restores it exactly.
func checkPatchesApply(t *testing.T, e *env.Env, tasks []task.Task) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	git(t, ".", "clone", "-q", filepath.Join(e.LayerDir(), "repo"), dir)
	for _, tk := range tasks {
		for _, p := range []struct{ name, text string }{{"bug_patch", tk.BugPatch}, {"patch", tk.Patch}} {
			f := filepath.Join(t.TempDir(), p.name)
			if err := os.WriteFile(f, []byte(p.text), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := osexec.Command("git", "apply", f)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: git apply %s: %v\n%s", tk.InstanceID, p.name, err, out)
			}
			if p.name == "bug_patch" && !strings.Contains(p.text, "+++ b/"+tk.File) {
				t.Errorf("%s: bug_patch does not change %s:\n%s", tk.InstanceID, tk.File, p.text)
			}
		}
		if st := git(t, dir, "status", "--porcelain"); st != "" {
			t.Errorf("%s: bug_patch then patch leave changes:\n%s", tk.InstanceID, st)
			git(t, dir, "checkout", "-q", "--", ".")
		}
	}
}

// TestHazards: a mutant that makes the tests hang and one that breaks
// its module's import are rejected with their reasons, and the run goes
// on to verify the others.
func TestHazards(t *testing.T) {
	e := buildEnv(t, envbuild.Options{Source: "testdata/hazards"})
	out := filepath.Join(t.TempDir(), "tasks.jsonl")
	sum, err := Mutate(context.Background(), testSandboxes, e, MutateOptions{Out: out, Seed: 1, Workers: 2,
		Families: []string{mutate.Functions, mutate.Statements, mutate.Operators}, TimeoutFactor: timeoutFactor(2)})
	if err != nil {
		t.Fatalf("Mutate: %v", err)
	}
	type dec struct{ kind, desc, reason string }
	var decs []dec
	err = jsonl.Decode(decisionsPath(out), func(_ int, d decision) error {
		decs = append(decs, dec{d.Kind, d.Desc, d.Reason})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		kind, desc, reason string
	}{
		{kindHang, "remove line 10 of count_up", "the tests hang: still running after"},
		{kindHang, "replace += with -= at line 10 of count_up", "the tests hang"},
		{kindImport, "remove the body of build_table", "importing hazards.table fails: TypeError: 'NoneType' object is not subscriptable"},
	}
	for _, c := range cases {
		found := false
		for _, d := range decs {
			if d.desc == c.desc {
				found = true
				if d.kind != c.kind || !strings.Contains(d.reason, c.reason) {
					t.Errorf("%s: decided %q (%s), want %q with reason containing %q", c.desc, d.kind, d.reason, c.kind, c.reason)
				}
			}
		}
		if !found {
			t.Errorf("no decision for %q; decisions: %v", c.desc, decs)
		}
	}
	if sum.Written == 0 || sum.Rejected[kindHang] < 2 || sum.Rejected[kindImport] < 1 {
		t.Errorf("summary: wrote %d, rejected %v; want tasks besides the rejected hazards", sum.Written, sum.Rejected)
	}
}
