package episode

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/env"
	"cwm/internal/env/envtest"
	"cwm/internal/episode/episodetest"
	"cwm/internal/sandbox"
)

// startCalc starts an episode of the calc task on a fresh sandbox.
func startCalc(t *testing.T) *Episode {
	t.Helper()
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	layer, tk := episodetest.CalcRepo(t)
	e := envtest.Put(t, t.TempDir(), tk.EnvID, layer)
	sb, err := env.NewSandboxes(rt).Open(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := Start(context.Background(), sb, tk, Options{})
	if err != nil {
		sb.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep
}

func bash(t *testing.T, ep *Episode, cmd string) string {
	t.Helper()
	obs, err := ep.Bash(context.Background(), cmd)
	if err != nil || !obs.OK {
		t.Fatalf("bash %q: %+v, %v", cmd, obs, err)
	}
	return obs.Text
}

// An episode starts with the bug in a clean tree whose only commit holds
// it, in the repository; its diff is what the tools changed since, taken
// without touching the index.
func TestStartAndDiff(t *testing.T) {
	ctx := context.Background()
	ep := startCalc(t)
	if got := bash(t, ep, "pwd; git status --porcelain; git rev-list --count HEAD; grep -c 'return a - b' calc.py"); got != "/repo\n1\n2" {
		t.Errorf("at the start: %q, want /repo, a clean tree with one commit, the bug planted", got)
	}
	if d, err := ep.Diff(ctx); err != nil || d != "" {
		t.Errorf("Diff at the start = %q, %v; want nothing", d, err)
	}
	obs, err := ep.EditText(ctx, "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\ndef add(a, b):\n    return a + b\n>>>>>>> REPLACE")
	if err != nil || !obs.OK {
		t.Fatalf("edit: %+v, %v", obs, err)
	}
	if _, err := ep.Create(ctx, "new.txt", "hello\n"); err != nil {
		t.Fatal(err)
	}
	bash(t, ep, "git add new.txt")
	d, err := ep.Diff(ctx)
	if err != nil || !strings.Contains(d, "+    return a + b") || !strings.Contains(d, "b/new.txt") {
		t.Errorf("Diff after the fix = %q, %v; want the fix and the new file", d, err)
	}
	// Diff leaves the index as the agent made it: the edit unstaged, the
	// file the agent added staged.
	if got := bash(t, ep, "git status --porcelain; git diff --cached --name-only; ls .git | grep -c cwm-diff-index"); got != " M calc.py\nA  new.txt\nnew.txt\n0" {
		t.Errorf("git status, the staged names and the index copies left after Diff = %q, want the edit unstaged, new.txt staged, no copy", got)
	}
	if ep.Task().InstanceID != "calc-1" || ep.RepoRoot() != "/repo" || len(ep.Base()) != 40 {
		t.Errorf("Task, RepoRoot, Base = %s, %s, %q", ep.Task().InstanceID, ep.RepoRoot(), ep.Base())
	}
}

// A clone starts with the original's files and session state as they
// are and goes on without either seeing the other's changes; Reset brings an episode back
// to its start, the same commit with the bug, in a fresh session.
func TestCloneAndReset(t *testing.T) {
	ctx := context.Background()
	ep := startCalc(t)
	base := ep.Base()
	bash(t, ep, "echo before > shared.txt; cd /tmp; export MARK=1")
	clone, err := ep.Clone(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer clone.Close()
	if got := bash(t, clone, "pwd; cat /repo/shared.txt; echo ${MARK:-unset}"); got != "/tmp\nbefore\n1" {
		t.Errorf("in the clone: %q, want the original's files, directory and exported variables", got)
	}
	fresh, err := ep.Fork(ctx, Session{})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if got := bash(t, fresh, "pwd; cat shared.txt; echo ${MARK:-unset}"); got != "/repo\nbefore\nunset" {
		t.Errorf("in a fork with no session: %q, want the original's files and a fresh session in /repo", got)
	}
	bash(t, clone, "echo clone > /repo/mine.txt")
	bash(t, ep, "echo original > /repo/theirs.txt")
	if got := bash(t, ep, "ls /repo/mine.txt 2>&1 | grep -c 'No such'"); got != "1" {
		t.Errorf("the original sees the clone's file")
	}
	if got := bash(t, clone, "ls /repo/theirs.txt 2>&1 | grep -c 'No such'"); got != "1" {
		t.Errorf("the clone sees the original's file")
	}
	if clone.Base() != base {
		t.Errorf("clone base %s, want %s", clone.Base(), base)
	}

	if err := ep.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if got := bash(t, ep, "pwd; git status --porcelain; echo ${MARK:-unset}; grep -c 'return a - b' calc.py"); got != "/repo\nunset\n2" {
		t.Errorf("after Reset: %q, want /repo, a clean tree, a fresh session, the bug", got)
	}
	if ep.Base() != base {
		t.Errorf("after Reset the base is %s, want the same commit %s", ep.Base(), base)
	}
	if got := bash(t, clone, "cat /repo/shared.txt"); got != "before" {
		t.Errorf("resetting the original changed the clone: %q", got)
	}
}

// A session's state survives a fork however its directory is named and
// whatever its variables hold; what was not exported stays behind.
func TestSessionCarriesOver(t *testing.T) {
	ctx := context.Background()
	ep := startCalc(t)
	bash(t, ep, `mkdir -p "/tmp/it's a dir"; cd "/tmp/it's a dir"; export ODD=$'a b\'c\n$d "e"'; LOCAL=1; export -n HOME`)
	s, err := ep.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Dir != "/tmp/it's a dir" || !strings.Contains(s.Exports, "ODD=") {
		t.Fatalf("Session = %+v, want the directory and ODD", s)
	}
	clone, err := ep.Fork(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	defer clone.Close()
	if got, want := bash(t, clone, `pwd; printf '%s|' "$ODD" "${LOCAL:-unset}"`), "/tmp/it's a dir\na b'c\n$d \"e\"|unset|"; got != want {
		t.Errorf("in the fork: %q, want %q", got, want)
	}
}

// A layer copied since it was built (cp -a: new inodes and change times,
// as on another machine) still takes the bug patch: git's index is
// refreshed before it is applied.
func TestStartOnCopiedLayer(t *testing.T) {
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	layer, tk := episodetest.CalcRepo(t)
	copied := filepath.Join(t.TempDir(), "layer")
	if out, err := exec.Command("cp", "-a", layer, copied).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	e := envtest.Put(t, t.TempDir(), tk.EnvID, copied)
	sb, err := env.NewSandboxes(rt).Open(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := Start(context.Background(), sb, tk, Options{})
	if err != nil {
		sb.Close()
		t.Fatalf("Start on a copied layer: %v", err)
	}
	defer ep.Close()
	if got := bash(t, ep, "grep -c 'return a - b' calc.py"); got != "2" {
		t.Errorf("the bug is not planted: %q", got)
	}
}
