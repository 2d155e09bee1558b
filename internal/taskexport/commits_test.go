package taskexport

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cwm/internal/base/basetest"
	"cwm/internal/egress"
	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/pytestenv"
	"cwm/internal/task"
	"cwm/internal/tasks"
)

// ledgerHistory is a repository of three commits: the start, then two
// real bug fixes, each with the test that finds its bug (the second's
// parametrised with an id that has a space, which SWE-bench's parser
// cannot reproduce).
var ledgerHistory = []struct {
	msg   string
	files map[string]string
}{
	{"Start ledger", map[string]string{
		"ledger/__init__.py": "",
		"ledger/money.py":    "def total(xs):\n    return sum(xs[1:])\n\n\ndef label(name):\n    return ''.join(name.split()).upper()\n",
		"tests/test_money.py": "from ledger.money import label, total\n\n\ndef test_empty():\n    assert total([]) == 0\n\n\n" +
			"def test_label():\n    assert label('a') == 'A'\n",
		"pyproject.toml": "[project]\nname = \"ledger\"\nversion = \"0.1\"\n",
	}},
	{"Fix total: count the first entry\n\ntotal([1, 2]) was 2.", map[string]string{
		"ledger/money.py": "def total(xs):\n    return sum(xs)\n\n\ndef label(name):\n    return ''.join(name.split()).upper()\n",
		"tests/test_money.py": "from ledger.money import label, total\n\n\ndef test_empty():\n    assert total([]) == 0\n\n\n" +
			"def test_label():\n    assert label('a') == 'A'\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n",
	}},
	{"Fix label: keep the spaces of a name\n\nlabel('a b') lost its space.", map[string]string{
		"ledger/money.py": "def total(xs):\n    return sum(xs)\n\n\ndef label(name):\n    return name.upper()\n",
		"tests/test_money.py": "import pytest\n\nfrom ledger.money import label, total\n\n\ndef test_empty():\n    assert total([]) == 0\n\n\n" +
			"def test_label():\n    assert label('a') == 'A'\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n\n\n" +
			"@pytest.mark.parametrize('name', ['a  b', 'c d', 'e'])\ndef test_label_spaces(name):\n    assert label(name) == name.upper()\n\n\n" +
			"def test_label_double():\n    assert label('x  y') == 'X  Y'\n",
	}},
}

// ledgerRepo writes ledgerHistory as a git repository and returns it with
// its commits, oldest first.
func ledgerRepo(t *testing.T) (string, []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ledger")
	var commits []string
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2024-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2024-01-02T03:04:05Z")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
		return strings.TrimSpace(string(b))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	for _, c := range ledgerHistory {
		for n, text := range c.files {
			p := filepath.Join(dir, n)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		git("add", "-A")
		git("commit", "-q", "-m", c.msg)
		commits = append(commits, git("rev-parse", "HEAD"))
	}
	return dir, commits
}

// bookwormEnv builds source on the Debian bookworm test base (so that
// the export writes its image), installing from the host's index.
func bookwormEnv(t *testing.T, source, name, test string) (*env.Env, *egress.Policy) {
	t.Helper()
	b := basetest.Link(t, basetest.Debian(t, "bookworm"), testHome)
	policy, err := egress.DefaultPolicy(context.Background())
	if err != nil {
		t.Fatalf("the host's package index: %v", err)
	}
	e, err := envbuild.Build(context.Background(), testSandboxes, envbuild.Options{Source: source, Test: test,
		Home: testHome, Runs: 1, Base: b.Digest, Mode: env.ModeOnline, Egress: &policy, Name: name,
		Limits: env.RunLimits{Timeout: 5 * time.Minute}})
	if err != nil {
		t.Fatalf("build %s on bookworm: %v", source, err)
	}
	if !e.Usable {
		t.Fatalf("%s on bookworm is not usable: %s", source, e.Reason)
	}
	return env.NewStore(testHome).Get(e.ID), &policy
}

// TestExportCommitTasks exports issue-fix tasks, made by cwm tasks commits
// of a repository's real fix commits (each task in the environment of
// its commit's parent, its test_patch the fix's tests), for SWE-bench and
// grades them with swebench 5.0.2's own get_eval_report in cwm's sandbox
// (gold RESOLVED_FULL, empty RESOLVED_NO for every one), and for Harbor
// (reward 1 after solve.sh, 0 without; imported back). The parametrised
// ids with a space are left out and counted.
func TestExportCommitTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three environments and grades with swebench")
	}
	py := pytestenv.Python(t, swebenchRequirements)
	t0 := time.Now()
	src, commits := ledgerRepo(t)
	e, policy := bookwormEnv(t, src, "ledger-bookworm", "python -m pytest -q")
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "tasks.jsonl")
	build := func(ctx context.Context, e *env.Env, rev string) (*env.Env, error) {
		return envbuild.AtRevision(ctx, testSandboxes, e, rev, envbuild.Options{Home: testHome, Runs: 1, Base: e.Base, Egress: policy})
	}
	ds, err := tasks.Commits(ctx, testSandboxes, e, tasks.CommitOptions{Out: out, Commits: commits[1:], Build: build, TimeoutFactor: 3})
	if err != nil {
		t.Fatalf("Commits: %v", err)
	}
	ts, err := task.Load(out)
	if err != nil || len(ts) != 2 {
		t.Fatalf("tasks: %v, %d of 2 commits made tasks: %+v", err, len(ts), ds)
	}
	t.Logf("3 environments and %d issue-fix tasks in %.0fs", len(ts), time.Since(t0).Seconds())
	for _, tk := range ts {
		if tk.Kind != "commit" || tk.TestPatch == "" || tk.BugPatch != "" {
			t.Fatalf("%s: kind %q, test_patch %d bytes, bug_patch %d bytes: want an issue-fix task", tk.InstanceID, tk.Kind, len(tk.TestPatch), len(tk.BugPatch))
		}
	}
	_, insts, c := checkSWEBench(t, py, ts, false)
	if c.exported != 2 || c.gold != 2 || c.empty != 2 || c.leftOutTests == 0 {
		t.Errorf("issue-fix tasks: %s; want both exported and graded, the ids with a space left out", c)
	}
	for _, in := range insts {
		if in.BaseCommit != commits[0] && in.BaseCommit != commits[1] {
			t.Errorf("%s: base_commit %s is not the fix's parent", in.InstanceID, in.BaseCommit)
		}
	}
	ones, zeros := checkHarbor(t, ts, 1)
	t.Logf("issue-fix tasks: %s; harbor: reward 1 for gold %d, 0 for empty %d", c, ones, zeros)
}
