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

// waitSpare waits until the spare branch in the making, if any, is made.
func (c *Checkpoint) waitSpare() {
	c.spare.mu.Lock()
	making := c.spare.making
	c.spare.mu.Unlock()
	if making != nil {
		<-making
	}
}

// spares is how many spare branches the runtime counts.
func spares(rt *Runtime) int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.spares
}

// After a checkpoint's first BranchShell, the next one takes the branch
// made ahead: a sandbox of its own on the checkpoint's files, its session
// in the branched sandbox's environment and directory; one made for
// another configuration is not taken. Releasing the checkpoint closes its
// spare, and the runtime holds no more spares than its warm pool.
func TestBranchShellSpare(t *testing.T) {
	rt := newRuntime(t, Options{Warm: 1})
	ctx := context.Background()
	base := baseLayer(t)
	s := newSandbox(t, rt, Config{Workdir: "/tmp", Env: []string{"WHO=parent"}, Layers: []string{base}})
	sh(t, s, "echo 1 > /tmp/a")
	c, err := s.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sh(t, s, "echo 2 > /tmp/a")
	b1, sh1, err := s.BranchShell(ctx, c, ShellOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b1.Close()
	defer sh1.Close()
	if err := rt.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	made := c.spare.sb
	if made == nil || spares(rt) != 1 {
		t.Fatalf("after the first branch and Settle: spare %v, runtime's count %d; want one made", made, spares(rt))
	}
	if _, err := sh1.Run(ctx, "echo b1 > /tmp/a", 0); err != nil {
		t.Fatal(err)
	}
	b2, sh2, err := s.BranchShell(ctx, c, ShellOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	defer sh2.Close()
	if b2 != made {
		t.Errorf("the second branch is not the spare made after the first")
	}
	if r, err := sh2.Run(ctx, "echo $WHO $PWD $(cat /tmp/a)", 0); err != nil || r.Output != "parent /tmp 1\n" {
		t.Errorf("the spare's session = %+v, %v; want the parent's variable and directory, the checkpoint's file", r, err)
	}
	c.waitSpare()
	// Another configuration: the spare is not taken (it is closed, and
	// its sandbox may come back from the warm pool, reset), and the branch
	// has its own environment.
	o := newSandbox(t, rt, Config{Workdir: "/srv", Env: []string{"WHO=other"}, Layers: []string{base}})
	b3, sh3, err := o.BranchShell(ctx, c, ShellOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := sh3.Run(ctx, "echo $WHO $PWD $(cat /tmp/a)", 0); err != nil || r.Output != "other /srv 1\n" {
		t.Errorf("the other configuration's branch = %+v, %v; want its own variable and directory", r, err)
	}
	sh3.Close()
	b3.Close()
	c.waitSpare()
	// The runtime's one slot is taken: another checkpoint gets no spare.
	c2, err := s.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b4, sh4, err := s.BranchShell(ctx, c2, ShellOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sh4.Close()
	b4.Close()
	c2.waitSpare()
	if c2.spare.sb != nil || spares(rt) != 1 {
		t.Errorf("a second checkpoint's spare %v, runtime's count %d; want none beyond the warm pool's 1", c2.spare.sb, spares(rt))
	}
	c2.Release()
	c.Release()
	if spares(rt) != 0 {
		t.Errorf("spares after the checkpoints' release = %d, want 0", spares(rt))
	}
	for _, x := range []*Sandbox{b1, b2, s, o} {
		x.Close()
	}
	if n := rt.LayerCount(); n != 0 {
		t.Errorf("frozen layers held once everything closed = %d, want 0 (a spare kept its layers)", n)
	}
}

// A checkpoint released while its spare is being made closes the spare
// when it is made.
func TestReleaseWhileSpareMade(t *testing.T) {
	rt := newRuntime(t, Options{})
	ctx := context.Background()
	s, c := checkpointed(t, rt)
	b, bsh, err := s.BranchShell(ctx, c, ShellOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	if spares(rt) != 0 || c.spare.sb != nil {
		t.Errorf("after the release: runtime's spares %d, checkpoint's %v; want none", spares(rt), c.spare.sb)
	}
	bsh.Close()
	b.Close()
	s.Close()
	if n := rt.LayerCount(); n != 0 {
		t.Errorf("frozen layers held once everything closed = %d, want 0", n)
	}
}
