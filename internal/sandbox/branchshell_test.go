package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"
)

// idle is how many warm sandboxes the runtime holds, each reset for reuse.
func idle(rt *Runtime) int {
	waitRecycled(rt)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.idleCount()
}

// checkpointed is a sandbox whose /tmp/a holds 1, and its checkpoint then.
func checkpointed(t *testing.T, rt *Runtime) (*Sandbox, *Checkpoint) {
	t.Helper()
	s := newSandbox(t, rt, Config{Workdir: "/tmp", Layers: []string{baseLayer(t)}})
	sh(t, s, "echo 1 > /tmp/a")
	c, err := s.Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Release)
	return s, c
}

// A branch's bash session starts in the new sandbox on the checkpoint's
// files, with the branched sandbox's environment and directory even when
// the warm sandbox it is made of had others; the two sandboxes go on
// apart.
func TestBranchShell(t *testing.T) {
	rt := newRuntime(t, Options{Warm: 4})
	ctx := context.Background()
	base := baseLayer(t)
	s := newSandbox(t, rt, Config{Workdir: "/tmp", Env: []string{"WHO=parent"}, Layers: []string{base}})
	other, err := rt.New(ctx, Config{Workdir: "/srv", Env: []string{"WHO=other"}, Layers: []string{base}})
	if err != nil {
		t.Fatal(err)
	}
	sh(t, other, "echo other > /tmp/a")
	other.Close()
	sh(t, s, "echo 1 > /tmp/a")
	c, err := s.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sh(t, s, "echo 2 > /tmp/a; echo new > /tmp/b")
	if n := idle(rt); n != 1 {
		t.Fatalf("warm sandboxes before the branch = %d, want 1 (the other one's)", n)
	}
	b, bsh, err := s.BranchShell(ctx, c, ShellOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := idle(rt); n != 0 {
		t.Errorf("warm sandboxes after the branch = %d, want 0: it took the warm one", n)
	}
	run := func(cmd string) string {
		t.Helper()
		r, err := bsh.Run(ctx, cmd, 0)
		if err != nil || r.Restarted || r.ExitCode != 0 {
			t.Fatalf("Run(%q) in the branch = %+v, %v", cmd, r, err)
		}
		return r.Output
	}
	if got, want := run("echo $WHO $PWD $(cat /tmp/a) $(ls /tmp/b 2>&1 | grep -c 'No such')"), "parent /tmp 1 1\n"; got != want {
		t.Errorf("the branch's session = %q, want %q (the parent's variable and directory, the checkpoint's files)", got, want)
	}
	run("cd /srv; export MARK=kept; echo branch > /tmp/a")
	if got, want := run("echo $PWD $MARK"), "/srv kept\n"; got != want {
		t.Errorf("the branch's session after cd and export = %q, want %q", got, want)
	}
	if got := string(sh(t, s, "cat /tmp/a /tmp/b").Stdout); got != "2\nnew\n" {
		t.Errorf("the parent after the branch wrote = %q, want its own files", got)
	}
	bsh.Close()
	b.Close()
	c.Release()
	s.Close()
	if n := rt.LayerCount(); n != 0 {
		t.Errorf("frozen layers held after the branch, its checkpoint and its parent went = %d, want 0", n)
	}
}

// A branch that fails after its requests reached init (here: its context
// ends) leaves no layer held and no sandbox half made; the next branch
// works.
func TestBranchShellCanceled(t *testing.T) {
	rt := newRuntime(t, Options{Warm: 4})
	ctx := context.Background()
	s, c := checkpointed(t, rt)
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := s.BranchShell(done, c, ShellOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("BranchShell with its context ended = %v, want context.Canceled", err)
	}
	if n := rt.LayerCount(); n != 1 {
		t.Errorf("frozen layers after the failed branch = %d, want 1 (the checkpoint's)", n)
	}
	b, bsh, err := s.BranchShell(ctx, c, ShellOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	defer bsh.Close()
	if r, err := bsh.Run(ctx, "cat /tmp/a", 0); err != nil || r.Output != "1\n" {
		t.Errorf("the next branch's session: %+v, %v, want the checkpoint's file", r, err)
	}
}

// Requests sent right behind a swap of overlays, before its reply (what
// BranchShell does with its session's start), are all answered, after
// the swap: init reads one of them early to see whether it starts a
// command, and must handle any other as it would have.
func TestRequestsBehindSwap(t *testing.T) {
	rt := newRuntime(t, Options{})
	ctx := context.Background()
	s, c := checkpointed(t, rt)
	sh(t, s, "echo 22 > /tmp/a; echo b > /tmp/b")
	type sent struct {
		id uint64
		ch chan reply
	}
	var stats []sent
	err := s.rollback(ctx, c, func() {
		for _, p := range []string{"/tmp/a", "/tmp/b"} {
			id, ch := s.register()
			if err := s.send(request{ID: id, Op: "stat", Path: p}); err != nil {
				t.Errorf("send stat %s: %v", p, err)
			}
			stats = append(stats, sent{id, ch})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// A request init lost would never be answered: the wait is bounded.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var got []string
	for _, st := range stats {
		r, err := s.wait(wctx, st.ch)
		s.unregister(st.id)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			got = append(got, "no answer")
		case err != nil:
			got = append(got, "error")
		default:
			got = append(got, map[int64]string{2: "size 2"}[r.Size])
		}
	}
	if len(got) != 2 || got[0] != "size 2" || got[1] != "error" {
		t.Errorf("stats of /tmp/a and /tmp/b sent behind a rollback = %q, want [size 2 error]: the checkpoint's files", got)
	}
}
