package tasks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/sandbox"
	"cwm/internal/task"
)

// calcRepo is a small history with two commits that touch tests and
// source: a real fix (its new test fails without it) and a docstring change
// whose new test passes without it.
type calcRepo struct {
	dir              string
	root, fix, extra string
}

var (
	calcOnce sync.Once
	calc     calcRepo
)

const calcMeanFixMsg = "Fix mean: divide by the number of values\n\nmean([2, 4]) returned 2.0 instead of 3.0."

func calcHistory(t *testing.T) calcRepo {
	calcOnce.Do(func() {
		dir := filepath.Join(testHome, "src", "calc")
		git(t, testHome, "init", "-q", "-b", "main", dir)
		writeFiles(t, dir, map[string]string{
			"calc/__init__.py": "",
			"calc/stats.py":    "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n\n\ndef clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n",
			"tests/test_stats.py": "from calc.stats import clamp, mean\n\n\ndef test_clamp():\n    assert clamp(5, 0, 3) == 3\n\n\n" +
				"def test_mean_empty_raises():\n    try:\n        mean([])\n    except ZeroDivisionError:\n        return\n",
		})
		git(t, dir, "add", "-A")
		git(t, dir, "commit", "-q", "-m", "Start calc")
		root := git(t, dir, "rev-parse", "HEAD")
		writeFiles(t, dir, map[string]string{
			"calc/stats.py": "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n",
			"tests/test_stats.py": "from calc.stats import clamp, mean\n\n\ndef test_clamp():\n    assert clamp(5, 0, 3) == 3\n\n\n" +
				"def test_mean_empty_raises():\n    try:\n        mean([])\n    except ZeroDivisionError:\n        return\n\n\n" +
				"def test_mean():\n    assert mean([2, 4]) == 3.0\n",
		})
		git(t, dir, "commit", "-q", "-a", "-m", calcMeanFixMsg)
		fix := git(t, dir, "rev-parse", "HEAD")
		writeFiles(t, dir, map[string]string{
			"calc/stats.py": "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef clamp(x, lo, hi):\n    \"\"\"x, or the bound it crosses.\"\"\"\n    return max(lo, min(x, hi))\n",
			"tests/test_stats.py": "from calc.stats import clamp, mean\n\n\ndef test_clamp():\n    assert clamp(5, 0, 3) == 3\n\n\n" +
				"def test_clamp_low():\n    assert clamp(-5, 0, 3) == 0\n\n\n" +
				"def test_mean_empty_raises():\n    try:\n        mean([])\n    except ZeroDivisionError:\n        return\n\n\n" +
				"def test_mean():\n    assert mean([2, 4]) == 3.0\n",
		})
		git(t, dir, "commit", "-q", "-a", "-m", "Document clamp and test its lower bound")
		calc = calcRepo{dir: dir, root: root, fix: fix, extra: git(t, dir, "rev-parse", "HEAD")}
	})
	if calc.dir == "" {
		t.Fatal("building the calc history failed in an earlier test")
	}
	return calc
}

func calcEnv(t *testing.T) (*env.Env, calcRepo) {
	repo := calcHistory(t)
	return buildEnv(t, envbuild.Options{Source: repo.dir, Test: "python -m pytest -q"}), repo
}

// TestCommits: CWM-SPEC section 3, "Issue-fix: check out the commit
// before a real bug-fixing PR, give the issue text; the tests must fail
// before and the fix must be necessary and sufficient." The fix commit
// becomes a task; the commit whose new test passes without its change is
// rejected with that reason.
func TestCommits(t *testing.T) {
	e, repo := calcEnv(t)
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "tasks.jsonl")
	ds, err := Commits(ctx, testSandboxes, e, CommitOptions{Out: out, Commits: []string{repo.fix, repo.extra}, Build: atParent, TimeoutFactor: timeoutFactor(3)})
	if err != nil {
		t.Fatalf("Commits: %v", err)
	}
	if len(ds) != 2 {
		t.Fatalf("Commits decided %d commits, want 2: %+v", len(ds), ds)
	}
	if ds[0].Kind != kindVerified || ds[0].Parent != repo.root {
		t.Errorf("fix commit: %+v, want verified with parent %s", ds[0], repo.root)
	}
	if ds[1].Kind != "tests pass without the fix" || !strings.Contains(ds[1].Reason, "already pass without the fix") {
		t.Errorf("docstring commit: kind %q reason %q, want it rejected because its tests already pass", ds[1].Kind, ds[1].Reason)
	}
	tasks, err := task.Load(out)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks file: %v, %d tasks; want 1", err, len(tasks))
	}
	tk := tasks[0]
	want := task.Task{
		InstanceID: "calc__commit-" + repo.fix[:12], Repo: "calc", BaseCommit: repo.root,
		FailToPass:       []string{"tests/test_stats.py::test_mean"},
		PassToPass:       []string{"tests/test_stats.py::test_clamp", "tests/test_stats.py::test_mean_empty_raises"},
		ProblemStatement: calcMeanFixMsg + "\n", EnvironmentSetupCommit: repo.root, Kind: "commit",
		CreatedAt: "2024-01-02T03:04:05Z",
	}
	got := task.Task{InstanceID: tk.InstanceID, Repo: tk.Repo, BaseCommit: tk.BaseCommit, FailToPass: tk.FailToPass,
		PassToPass: tk.PassToPass, ProblemStatement: tk.ProblemStatement, EnvironmentSetupCommit: tk.EnvironmentSetupCommit,
		Kind: tk.Kind, CreatedAt: tk.CreatedAt}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("task (-want +got):\n%s", diff)
	}
	if !strings.Contains(tk.TestPatch, "+++ b/tests/test_stats.py") || strings.Contains(tk.TestPatch, "calc/stats.py") {
		t.Errorf("test_patch should change only the tests:\n%s", tk.TestPatch)
	}
	if !strings.Contains(tk.Patch, "+    return sum(xs) / len(xs)") || strings.Contains(tk.Patch, "tests/") {
		t.Errorf("patch should be the source fix only:\n%s", tk.Patch)
	}
	if tk.EnvID == e.ID || tk.BugPatch != "" {
		t.Errorf("task env %s (HEAD's is %s), bug_patch %q: want the parent's environment and no bug_patch", tk.EnvID, e.ID, tk.BugPatch)
	}
	verdicts, err := Validate(ctx, testSandboxes, tasks, ValidateOptions{Store: env.NewStore(testHome), TimeoutFactor: timeoutFactor(3)})
	if err != nil || !verdicts[0].OK {
		t.Errorf("Validate(commit task) = %+v, %v; want it to hold", verdicts, err)
	}

	// Resuming decides nothing twice; --auto proposes exactly the two
	// commits that touch tests and source (not the root).
	again, err := Commits(ctx, testSandboxes, e, CommitOptions{Out: out, Auto: true, Build: atParent, TimeoutFactor: timeoutFactor(3)})
	if err != nil || len(again) != 0 {
		t.Errorf("--auto after deciding both commits: %+v, %v; want nothing new", again, err)
	}
	// --max counts the tasks already written: with as many, a run with
	// no decisions yet decides nothing.
	capped := filepath.Join(t.TempDir(), "tasks.jsonl")
	if data, err := os.ReadFile(out); err != nil || os.WriteFile(capped, data, 0o644) != nil {
		t.Fatalf("copy %s: %v", out, err)
	}
	if ds, err := Commits(ctx, testSandboxes, e, CommitOptions{Out: capped, Auto: true, Max: 1, Build: atParent, TimeoutFactor: timeoutFactor(3)}); err != nil || len(ds) != 0 {
		t.Errorf("--auto --max 1 beside one task written: %+v, %v; want nothing decided", ds, err)
	}
	// The layer holds the commit alone; the history is the source's.
	sb, err := testSandboxes.Open(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if n, err := execOut(ctx, sb, sandbox.Cmd{Args: gitArgs("rev-list", "--count", "HEAD"), Dir: "/repo"}); err != nil || strings.TrimSpace(n) != "1" {
		t.Errorf("the layer's repository has %q commits (%v), want the one", n, err)
	}
	hist, err := env.OpenHistory(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	defer hist.Close()
	git := func(args ...string) (string, error) { return hist.Git(ctx, args...) }
	auto, err := listCommits(git, e.Commit, CommitOptions{Auto: true})
	if diff := cmp.Diff([]string{repo.extra, repo.fix}, auto); err != nil || diff != "" {
		t.Errorf("--auto commits (-want +got): %v\n%s", err, diff)
	}
}

func TestCommitsRejects(t *testing.T) {
	e, repo := calcEnv(t)
	out := filepath.Join(t.TempDir(), "tasks.jsonl")
	ds, err := Commits(context.Background(), testSandboxes, e, CommitOptions{Out: out, Commits: []string{repo.root}, Build: atParent})
	if err != nil || len(ds) != 1 || ds[0].Kind != "no parent" {
		t.Errorf("Commits(root) = %+v, %v; want rejected for having no parent", ds, err)
	}
	_, err = Commits(context.Background(), testSandboxes, e, CommitOptions{Out: out, Commits: []string{repo.fix, repo.extra}, IssueText: "x", Build: atParent})
	if err == nil {
		t.Errorf("Commits with an issue text and two commits = nil error")
	}
	tk := textkitEnv(t)
	if _, err := Commits(context.Background(), testSandboxes, tk, CommitOptions{Out: out, Commits: []string{"HEAD"}, Build: atParent}); err == nil || !strings.Contains(err.Error(), "plain directory") {
		t.Errorf("Commits on a plain-directory environment: %v, want an error saying why", err)
	}
}
