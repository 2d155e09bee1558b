package reward

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/sandbox"
	"cwm/internal/task"
)

// calcFiles is the buggy repository the grading tests build an
// environment from: div returns 0 for a zero divisor instead of raising.
var calcFiles = map[string]string{
	"calc.py": "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    if b == 0:\n        return 0\n    return a / b\n",
	"tests/test_calc.py": "from calc import add, div\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n" +
		"def test_div():\n    assert div(6, 3) == 2\n",
}

// diffOf is `git diff` of calcFiles after the given files are replaced
// (an empty content deletes the file): a real patch, as a model's would
// be.
func diffOf(t testing.TB, change map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	write := func(files map[string]string) {
		for name, content := range files {
			p := filepath.Join(dir, name)
			if content == "" {
				os.Remove(p)
				continue
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	git("init", "-q")
	write(calcFiles)
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	write(change)
	git("add", "-A")
	return git("diff", "--cached")
}

var (
	envOnce  sync.Once
	testEnv  *env.Env
	testRT   *sandbox.Runtime
	testHome string
	envErr   error
)

// calcEnv builds the environment of calcFiles once for the package's
// tests, on a runtime that keeps sandboxes warm: every grading must still
// start from a clean tree.
func calcEnv(t testing.TB) (*env.Sandboxes, *env.Env) {
	t.Helper()
	envOnce.Do(func() {
		home, err := os.MkdirTemp("", "cwm-reward-test-")
		if err != nil {
			envErr = err
			return
		}
		testHome = home
		src := filepath.Join(home, "calc")
		for name, content := range calcFiles {
			os.MkdirAll(filepath.Join(src, filepath.Dir(name)), 0o755)
			if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
				envErr = err
				return
			}
		}
		if testRT, envErr = sandbox.NewRuntime(sandbox.Options{Home: home}); envErr != nil {
			return
		}
		testEnv, envErr = envbuild.Build(context.Background(), env.NewSandboxes(testRT), envbuild.Options{
			Home: home, Source: src, Runs: 1, NoCoverage: true,
			Limits: env.RunLimits{Timeout: 2 * time.Minute},
		})
		if envErr == nil && !testEnv.Usable {
			envErr = fmt.Errorf("environment not usable: %s", testEnv.Reason)
		}
	})
	if envErr != nil {
		t.Fatalf("build the calc environment: %v", envErr)
	}
	return env.NewSandboxes(testRT), testEnv
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testRT != nil {
		testRT.Close()
	}
	if testHome != "" {
		os.RemoveAll(testHome)
	}
	os.Exit(code)
}

const (
	divFixed = "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    if b == 0:\n        raise ZeroDivisionError(\"b is zero\")\n    return a / b\n"
	divZero  = "tests/test_calc.py::test_div_zero"
	addTest  = "tests/test_calc.py::test_add"
	divTest  = "tests/test_calc.py::test_div"
)

// calcTasks are a task from history (a test patch adds the failing test)
// and a mutate-fix task (a bug patch breaks add on the environment's
// tree).
func calcTasks(t testing.TB) (history, mutate *task.Task) {
	testPatch := diffOf(t, map[string]string{"tests/test_calc.py": calcFiles["tests/test_calc.py"] +
		"\n\ndef test_div_zero():\n    import pytest\n    with pytest.raises(ZeroDivisionError):\n        div(1, 0)\n"})
	history = &task.Task{InstanceID: "calc__calc-1", Repo: "calc/calc", Patch: diffOf(t, map[string]string{"calc.py": divFixed}),
		TestPatch: testPatch, FailToPass: []string{divZero}, PassToPass: []string{addTest, divTest}}
	addBroken := strings.Replace(calcFiles["calc.py"], "a + b", "a - b", 1)
	bug := diffOf(t, map[string]string{"calc.py": addBroken})
	mutate = &task.Task{InstanceID: "calc__calc-2", Repo: "calc/calc", BugPatch: bug,
		Patch:      strings.NewReplacer("-    return a + b", "+    return a + b", "+    return a - b", "-    return a - b").Replace(bug),
		FailToPass: []string{addTest}, PassToPass: []string{divTest}}
	return history, mutate
}

func TestGrade(t *testing.T) {
	rt, env := calcEnv(t)
	history, mutate := calcTasks(t)
	gold := history.Patch
	// The first context line of the hunk no longer matches: git apply
	// refuses, patch with fuzz takes it.
	fuzzy := strings.Replace(gold, "\n \n def div", "\n # moved here\n def div", 1)
	if fuzzy == gold {
		t.Fatalf("could not make the fuzzy patch from:\n%s", gold)
	}
	skipAll := diffOf(t, map[string]string{"conftest.py": "import pytest\n\n\n" +
		"def pytest_collection_modifyitems(items):\n    for item in items:\n        item.add_marker(pytest.mark.skip(reason='not today'))\n"})
	tests := []struct {
		name     string
		task     *task.Task
		patch    string
		resolved bool
		apply    ApplyMethod
		outcomes map[string]string
		// simMin and simMax bound the similarity to the gold patch.
		simMin, simMax float64
		reason         string // substring of Reason
		cwm            float64
	}{
		{"skipping the tests is no fix", history, skipAll, false, ApplyGit,
			map[string]string{divZero: "skip", addTest: "skip", divTest: "skip"}, 0, 0, "FAIL_TO_PASS: 1 of 1 not passing (tests/test_calc.py::test_div_zero skip)", -1},
		{"gold patch", history, gold, true, ApplyGit,
			map[string]string{divZero: "pass", addTest: "pass", divTest: "pass"}, 1, 1, "", 1},
		{"wrong fix of the same lines", history, diffOf(t, map[string]string{"calc.py": strings.Replace(calcFiles["calc.py"], "return 0", "return float('inf')", 1)}), false, ApplyGit,
			map[string]string{divZero: "fail", addTest: "pass", divTest: "pass"}, 0.5, 0.99, "FAIL_TO_PASS: 1 of 1", 0},
		{"wrong fix elsewhere", history, diffOf(t, map[string]string{"calc.py": strings.Replace(calcFiles["calc.py"], "def add(a, b):\n", "def add(a, b):\n    \"\"\"Returns the sum of a and b, integers and floats alike.\"\"\"\n", 1)}), false, ApplyGit,
			map[string]string{divZero: "fail", addTest: "pass", divTest: "pass"}, 0.01, 0.49, "FAIL_TO_PASS", -1},
		{"fix that needs fuzz", history, fuzzy, true, ApplyFuzz,
			map[string]string{divZero: "pass", addTest: "pass", divTest: "pass"}, 0.5, 0.99, "", 1},
		{"patch that does not apply", history, strings.Replace(gold, "-        return 0", "-        return 42", 1), false, ApplyFailed,
			nil, 0.5, 0.99, "does not apply", 0},
		{"empty patch", history, "", false, ApplyEmpty, nil, 0, 0, "empty patch", -1},
		{"breaking a PASS_TO_PASS test", history, diffOf(t, map[string]string{"calc.py": strings.Replace(divFixed, "return a / b", "return a // b + 1", 1)}), false, ApplyGit,
			map[string]string{divZero: "pass", addTest: "pass", divTest: "fail"}, 0.5, 0.99, "PASS_TO_PASS: 1 of 2 not passing (tests/test_calc.py::test_div fail)", 0},
		{"mutate-fix task, gold", mutate, mutate.Patch, true, ApplyGit,
			map[string]string{addTest: "pass", divTest: "pass"}, 1, 1, "", 1},
		{"mutate-fix task, no fix", mutate, diffOf(t, map[string]string{"README": "nothing\n"}), false, ApplyGit,
			map[string]string{addTest: "fail", divTest: "pass"}, 0, 0, "FAIL_TO_PASS", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Grade(context.Background(), rt, env, tt.task, tt.patch)
			if err != nil {
				t.Fatalf("Grade: %v", err)
			}
			got := map[string]string{}
			for _, o := range r.Tests {
				got[o.ID] = o.Outcome
			}
			if len(got) == 0 {
				got = nil
			}
			if r.Resolved != tt.resolved || r.Apply != tt.apply || fmt.Sprint(got) != fmt.Sprint(tt.outcomes) {
				t.Errorf("Grade = resolved %v, apply %s, tests %v; want %v, %s, %v\nreason: %s\napply log: %s\nnote: %s",
					r.Resolved, r.Apply, got, tt.resolved, tt.apply, tt.outcomes, r.Reason, r.ApplyLog, r.TestNote)
			}
			if !strings.Contains(r.Reason, tt.reason) || (tt.reason == "") != (r.Reason == "") {
				t.Errorf("Grade reason = %q, want %q", r.Reason, tt.reason)
			}
			if r.Similarity == nil || r.Similarity.Mean < tt.simMin || r.Similarity.Mean > tt.simMax {
				t.Fatalf("Grade similarity = %+v (%s), want in [%v, %v]", r.Similarity, r.SimilarityError, tt.simMin, tt.simMax)
			}
			sim := r.Similarity.Mean
			if got := (Mapping{Kind: "cwm", Threshold: 0.5}).Reward(r.Resolved, &sim); got != tt.cwm {
				t.Errorf("cwm reward = %v, want %v", got, tt.cwm)
			}
			wantBinary := 0.0
			if tt.resolved {
				wantBinary = 1
			}
			if got := (Mapping{Kind: "binary"}).Reward(r.Resolved, &sim); got != wantBinary {
				t.Errorf("binary reward = %v, want %v", got, wantBinary)
			}
			if r.Seconds.Total <= 0 || r.Seconds.Total < r.Seconds.Setup+r.Seconds.Apply+r.Seconds.Tests-1e-3 {
				t.Errorf("Grade durations = %+v, want positive parts that add up", r.Seconds)
			}
		})
	}
}

func TestGradeTaskErrors(t *testing.T) {
	rt, env := calcEnv(t)
	history, _ := calcTasks(t)
	noTests := *history
	noTests.FailToPass, noTests.PassToPass = nil, nil
	badTestPatch := *history
	badTestPatch.TestPatch = strings.Replace(history.TestPatch, " def test_div():", " def test_divide():", 1)
	for _, tt := range []struct {
		name string
		task *task.Task
		msg  string
	}{
		{"no hidden tests", &noTests, "no FAIL_TO_PASS or PASS_TO_PASS tests"},
		{"test patch does not apply", &badTestPatch, "its test_patch does not apply"},
	} {
		_, err := Grade(context.Background(), rt, env, tt.task, history.Patch)
		if !errors.Is(err, ErrTask) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: Grade error = %v, want ErrTask with %q", tt.name, err, tt.msg)
		}
	}
}

// TestPatchPathsStayInside is the escape suite's row for patch paths: a
// candidate patch whose files climb out of the repository with "..", or
// go through a symlink the patch itself adds, is applied (or refused)
// inside the sandbox, and the host directory it aims at stays as it was.
// The control: that directory is writable from the host.
func TestPatchPathsStayInside(t *testing.T) {
	rt, env := calcEnv(t)
	history, _ := calcTasks(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "control"), nil, 0o644); err != nil {
		t.Fatalf("control: the host directory is not writable: %v", err)
	}
	os.Remove(filepath.Join(dir, "control"))
	up := strings.Repeat("../", 8) + strings.TrimPrefix(dir, "/")
	patches := map[string]string{
		"dot-dot":  "diff --git a/" + up + "/evil.py b/" + up + "/evil.py\nnew file mode 100644\n--- /dev/null\n+++ b/" + up + "/evil.py\n@@ -0,0 +1 @@\n+x = 1\n",
		"absolute": "--- /dev/null\n+++ " + dir + "/evil.py\n@@ -0,0 +1 @@\n+x = 1\n",
		"through a symlink": "diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+" + dir + "\n\\ No newline at end of file\n" +
			"diff --git a/link/evil.py b/link/evil.py\nnew file mode 100644\n--- /dev/null\n+++ b/link/evil.py\n@@ -0,0 +1 @@\n+x = 1\n",
	}
	for name, patch := range patches {
		if _, err := Grade(context.Background(), rt, env, history, patch); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s: the patch wrote %v into the host directory", name, ents)
		}
	}
}
