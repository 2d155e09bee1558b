package taskexport

import (
	"testing"
	"time"

	"cwm/internal/env"
	"cwm/internal/golden"
	"cwm/internal/task"
	"cwm/internal/testrun"
)

// TestFormats checks every text an export writes for one issue-fix task
// (a test_patch, a test command that changes directory) and one
// mutate-fix task against golden files (go test -update rewrites them).
func TestFormats(t *testing.T) {
	cmd, err := testrun.Parse("cd src && python -m pytest -q tests")
	if err != nil {
		t.Fatal(err)
	}
	e := &env.Env{ID: "proj-0123456789ab", Commit: "c0ffee0000000000000000000000000000000000", TestCommand: cmd,
		Limits: env.RunLimits{Timeout: 10 * time.Minute, Memory: 4 << 30}}
	testPatch := "diff --git a/src/tests/test_a.py b/src/tests/test_a.py\n--- a/src/tests/test_a.py\n+++ b/src/tests/test_a.py\n@@ -1 +1,2 @@\n x = 1\n+y = 2\n" +
		"diff --git a/src/tests/test_new.py b/src/tests/test_new.py\nnew file mode 100644\n--- /dev/null\n+++ b/src/tests/test_new.py\n@@ -0,0 +1 @@\n+def test_new(): pass\n"
	commitTask := &task.Task{InstanceID: "owner__proj-commit-abc", Repo: "owner/proj", Patch: "diff --git a/src/p.py b/src/p.py\n--- a/src/p.py\n+++ b/src/p.py\n@@ -1 +1 @@\n-a\n+b\n",
		TestPatch: testPatch, ProblemStatement: "It breaks.", CreatedAt: "2024-05-06T07:08:09Z",
		FailToPass: []string{"tests/test_new.py::test_new", "tests/test_a.py::test_x[a b]"}, PassToPass: []string{"tests/test_a.py::test_y"}, EnvID: e.ID}
	mutateTask := &task.Task{InstanceID: "proj__operators-123", Repo: "proj", Patch: commitTask.Patch, BugPatch: "diff --git a/src/p.py b/src/p.py\n--- a/src/p.py\n+++ b/src/p.py\n@@ -1 +1 @@\n-b\n+a\n",
		ProblemStatement: "Tests fail.", CreatedAt: "2024-05-06T07:08:09Z", FailToPass: []string{"tests/test_a.py::test_y"}, EnvID: e.ID}
	e.Baseline = []env.TestResult{{ID: "tests/test_new.py::test_new"}, {ID: "tests/test_a.py::test_x[a b]"}, {ID: "tests/test_a.py::test_y"}}
	for _, c := range []struct {
		name string
		t    *task.Task
	}{{"commit", commitTask}, {"mutate", mutateTask}} {
		inst, why, left := instance(e, c.t)
		if why != "" {
			t.Fatalf("%s: dropped: %s", c.name, why)
		}
		if c.name == "commit" && left != 1 {
			t.Errorf("commit: %d ids left out, want 1 (the one with a space)", left)
		}
		inst.BaseCommit = "ba5e000000000000000000000000000000000000"
		inst.Image = ImageName(e, TaskTag(c.t.InstanceID))
		if c.t.BugPatch == "" {
			inst.Image = ImageName(e, "latest") // an issue-fix task runs in its environment's image
		}
		if inst.EvalScript, err = EvalScript(e, inst.BaseCommit, c.t.TestPatch); err != nil {
			t.Fatal(err)
		}
		test, err := TestScript(inst)
		if err != nil {
			t.Fatal(err)
		}
		golden.CheckJSON(t, "testdata/golden/"+c.name+".instance.json", inst)
		golden.Check(t, "testdata/golden/"+c.name+".eval.sh", inst.EvalScript)
		golden.Check(t, "testdata/golden/"+c.name+".test.sh", test)
		golden.Check(t, "testdata/golden/"+c.name+".task.toml", taskTOML(inst, e))
		golden.Check(t, "testdata/golden/"+c.name+".Dockerfile", dockerfile(inst, c.t, e))
		golden.Check(t, "testdata/golden/"+c.name+".solve.sh", solveScript(inst.Patch))
	}
	unittest, _ := testrun.Parse("python -m unittest")
	if _, why, _ := instance(&env.Env{TestCommand: unittest}, mutateTask); why == "" {
		t.Error("a unittest environment's task was not dropped")
	}
	if _, why, _ := instance(e, &task.Task{Patch: "x", FailToPass: []string{"tests/test_a.py::test_x[a b]"}}); why == "" {
		t.Error("a task whose only FAIL_TO_PASS id has a space was not dropped")
	}
}

// TestKeepable: an id SWE-bench's pytest parser would cut, or whose cut
// key another id shares, is left out.
func TestKeepable(t *testing.T) {
	kept, left := keepable([]string{"a::t[x y]", "a::t[x", "a::u"}, []string{"a::t[x y]", "a::t[x", "a::u"})
	if len(kept) != 1 || kept[0] != "a::u" || len(left) != 2 {
		t.Errorf("keepable = %v, %v; want [a::u] and two left out (a space; a key another id shares)", kept, left)
	}
}
