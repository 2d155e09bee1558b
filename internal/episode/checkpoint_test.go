package episode

import (
	"context"
	"testing"
)

// A checkpoint keeps the files and the session's state; rollback and a
// branch from it return to both, and the diff sees every frozen layer.
func TestCheckpointRollbackBranch(t *testing.T) {
	ctx := context.Background()
	ep := startCalc(t)
	bash(t, ep, "echo one > one.txt; cd /tmp; export MARK=1")
	c, err := ep.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if got := bash(t, ep, "pwd; echo ${MARK:-unset}; cat /repo/one.txt"); got != "/tmp\n1\none" {
		t.Errorf("after the checkpoint: %q, want the session and files as they were", got)
	}
	bash(t, ep, "cd /repo; echo two > two.txt; rm one.txt; export MARK=2")
	diff, err := ep.Diff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ep.BranchFrom(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := ep.Rollback(ctx, c); err != nil {
		t.Fatal(err)
	}
	for name, e := range map[string]*Episode{"rollback": ep, "branch": b} {
		if got := bash(t, e, "pwd; echo ${MARK:-unset}; cat /repo/one.txt; ls /repo/two.txt 2>&1 | grep -c 'No such'"); got != "/tmp\n1\none\n1" {
			t.Errorf("after the %s: %q, want the checkpoint's directory, variables and files", name, got)
		}
	}
	bash(t, ep, "cd /repo; echo two > two.txt; rm one.txt")
	again, err := ep.Diff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again != diff {
		t.Errorf("diff after rollback and the same changes = %q, want %q", again, diff)
	}
}
