package grade

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/sandbox"
	"cwm/internal/sandbox/sandboxtest"
	"cwm/internal/task"
	"cwm/internal/tasks"
)

var (
	testSandboxes *env.Sandboxes
	testHome      string
)

func TestMain(m *testing.M) {
	sandboxtest.Main(m, "grade", func(rt *sandbox.Runtime, home string) {
		testSandboxes, testHome = env.NewSandboxes(rt), home
	})
}

// TestGrade grades predictions over mutate-fix tasks of the example
// repository, one of each kind SWE-bench's harness tells apart: the
// gold patch (resolved), a patch that applies and fixes nothing
// (unresolved, with the FAIL_TO_PASS tests as failures), one that does
// not apply (an error), an empty and a null patch (empty patches, the
// null one patch_is_None), an instance id no task has (unknown), and a
// task without prediction (incomplete).
func TestGrade(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an environment and mutates it")
	}
	ctx := context.Background()
	e, err := envbuild.Build(ctx, testSandboxes, envbuild.Options{Source: "../../examples/textkit", Home: testHome, Runs: 2,
		Limits: env.RunLimits{Timeout: 5 * time.Minute}})
	if err != nil || !e.Usable {
		t.Fatalf("build textkit: %v %v", err, e)
	}
	out := filepath.Join(t.TempDir(), "tasks.jsonl")
	if _, err := tasks.Mutate(ctx, testSandboxes, e, tasks.MutateOptions{Out: out, Max: 5, PerFunction: 1, Seed: 2,
		Workers: 2, TimeoutFactor: 3}); err != nil {
		t.Fatalf("Mutate: %v", err)
	}
	ts, err := task.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) < 5 {
		t.Fatalf("Mutate wrote %d tasks, want 5", len(ts))
	}
	noop := "diff --git a/NOTES.txt b/NOTES.txt\nnew file mode 100644\n--- /dev/null\n+++ b/NOTES.txt\n@@ -0,0 +1 @@\n+nothing fixed\n"
	bad := "diff --git a/nope.py b/nope.py\n--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-x\n+y\n"
	empty := ""
	preds := []Prediction{
		{ts[0].InstanceID, "m", &ts[0].Patch},
		{ts[1].InstanceID, "m", &noop},
		{ts[2].InstanceID, "m", &bad},
		{ts[3].InstanceID, "m", &empty},
		{ts[4].InstanceID, "m", nil},
		{"no-such-task", "m", &ts[0].Patch},
	}
	t0 := time.Now()
	rep, err := Grade(ctx, testSandboxes, ts[:5], preds, Options{Store: env.NewStore(testHome)})
	if err != nil {
		t.Fatalf("Grade: %v", err)
	}
	t.Logf("graded %d predictions in %.1fs", len(preds), time.Since(t0).Seconds())
	got := map[string][]string{"resolved": rep.ResolvedIDs, "unresolved": rep.UnresolvedIDs, "error": rep.ErrorIDs,
		"empty": rep.EmptyPatchIDs, "unknown": rep.UnknownIDs, "completed": rep.CompletedIDs}
	want := map[string][]string{"resolved": {ts[0].InstanceID}, "unresolved": {ts[1].InstanceID}, "error": {ts[2].InstanceID},
		"empty": sortedPair(ts[3].InstanceID, ts[4].InstanceID), "unknown": {"no-such-task"},
		"completed": sortedPair(ts[0].InstanceID, ts[1].InstanceID)}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Grade's ids (-want +got):\n%s", d)
	}
	if rep.SubmittedInstances != 6 || rep.TotalInstances != 5 || rep.ResolvedInstances != 1 {
		t.Errorf("counts: total %d, submitted %d, resolved %d", rep.TotalInstances, rep.SubmittedInstances, rep.ResolvedInstances)
	}
	un := rep.Instances[ts[1].InstanceID]
	if d := cmp.Diff(sortedCopy(ts[1].FailToPass), sortedCopy(un.TestsStatus["FAIL_TO_PASS"].Failure)); d != "" || !un.PatchSuccessfullyApplied {
		t.Errorf("unresolved instance: FAIL_TO_PASS failures (-want +got):\n%s\n%+v", d, un)
	}
	gold := rep.Instances[ts[0].InstanceID]
	if n := len(gold.TestsStatus["PASS_TO_PASS"].Success); n != len(ts[0].PassToPass) {
		t.Errorf("gold: %d PASS_TO_PASS successes, want %d", n, len(ts[0].PassToPass))
	}
	if !strings.Contains(rep.Instances[ts[2].InstanceID].Error, "Patch Apply Failed") {
		t.Errorf("patch that does not apply: %+v", rep.Instances[ts[2].InstanceID])
	}
	if !rep.Instances[ts[4].InstanceID].PatchIsNone || rep.Instances[ts[3].InstanceID].PatchIsNone {
		t.Errorf("patch_is_None: null %+v, empty %+v", rep.Instances[ts[4].InstanceID], rep.Instances[ts[3].InstanceID])
	}
}

func sortedPair(a, b string) []string {
	if b < a {
		a, b = b, a
	}
	return []string{a, b}
}

func sortedCopy(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

// TestReadPredictions reads both forms SWE-bench takes and refuses bad
// input with where it is.
func TestReadPredictions(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, text string
		want       int
		err        string
	}{
		{"list", `[{"instance_id":"a","model_name_or_path":"m","model_patch":"x"},{"instance_id":"b","model_name_or_path":"m","model_patch":null}]`, 2, ""},
		{"jsonl", "{\"instance_id\":\"a\",\"model_name_or_path\":\"m\",\"model_patch\":\"\"}\n{\"instance_id\":\"b\",\"model_name_or_path\":\"m\",\"model_patch\":\"y\"}\n", 2, ""},
		{"duplicate", "{\"instance_id\":\"a\",\"model_patch\":\"\"}\n{\"instance_id\":\"a\",\"model_patch\":\"\"}\n", 0, `:2: instance_id "a" already at line 1`},
		{"no patch", `[{"instance_id":"a"}]`, 0, "prediction 1: no model_patch"},
		{"no id", "{\"model_patch\":\"\"}\n", 0, ":1: no instance_id"},
	}
	for _, c := range cases {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadPredictions(p)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ReadPredictions(%s) = %v, want error with %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || len(got) != c.want {
			t.Errorf("ReadPredictions(%s) = %d, %v; want %d", c.name, len(got), err, c.want)
		}
	}
}
