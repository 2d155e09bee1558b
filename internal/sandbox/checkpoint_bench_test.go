package sandbox

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// writeFiles changes n files in the sandbox, in one command.
func writeFiles(b *testing.B, s *Sandbox, n int) {
	b.Helper()
	r := sh(b, s, fmt.Sprintf("mkdir -p /tmp/w && cd /tmp/w && for i in $(seq 1 %d); do echo $i > f$i; done", n))
	if r.ExitCode != 0 {
		b.Fatalf("write %d files: %s", n, r.Stderr)
	}
}

// waitRecycled waits until the warm sandboxes closed so far are reset for
// reuse, so that what is timed next does not wait for that.
func waitRecycled(rt *Runtime) {
	rt.mu.Lock()
	var chs []chan struct{}
	for _, list := range rt.idle {
		for _, s := range list {
			if s.recycled != nil {
				chs = append(chs, s.recycled)
			}
		}
	}
	rt.mu.Unlock()
	for _, ch := range chs {
		<-ch
	}
}

// settle waits until the sandbox has done what its last reset, rollback
// or checkpoint left for after its reply (tearing down the old overlay,
// in proportion to what was cached in it): a command runs only after.
func settle(b *testing.B, s *Sandbox) {
	b.Helper()
	sh(b, s, "true")
}

// timed runs f and returns how long it took.
func timed(b *testing.B, f func() error) time.Duration {
	b.Helper()
	t0 := time.Now()
	if err := f(); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}

// p50ms is the median of ds in milliseconds.
func p50ms(ds []time.Duration) float64 { return float64(p50(ds).Microseconds()) / 1000 }

// p50ratio is the ratio of the medians of a and b.
func p50ratio(a, b []time.Duration) float64 { return float64(p50(a)) / float64(p50(b)) }

// benchSandbox is a sandbox of a runtime of its own, both closed after b.
func benchSandbox(b *testing.B) (*Runtime, *Sandbox) {
	rt, err := NewRuntime(Options{Home: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	s, err := rt.New(context.Background(), Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return rt, s
}

// BenchmarkCheckpoint measures checkpoints against what they replace, in
// one run, and reports the ratios docs/benchmarks.md quotes: a checkpoint
// and a branch after 10,000 changed files against after 1 (target: within
// 1.2x), a branch against Clone after 100 (target: at most 0.5x), and a
// rollback against Reset (target: no slower). Times are medians.
func BenchmarkCheckpoint(b *testing.B) {
	rt, s := benchSandbox(b)
	ctx := context.Background()
	var ckpt, branch = map[int][]time.Duration{}, map[int][]time.Duration{}
	var clone, rollback, reset []time.Duration
	// The sizes take turns, so that a change in the machine's load falls
	// on all of them, and every checkpoint is held until the last is
	// measured: freeing a layer of 10,000 files leaves the kernel work to
	// do after the call returns (memory freed after an RCU grace period),
	// which would otherwise land in the next measured times. (A layer of
	// 10,000 small files is some 50 MiB: b.N of them are held.)
	var held []*Checkpoint
	defer func() {
		for _, cp := range held {
			cp.Release()
		}
	}()
	for i := 0; i < b.N; i++ {
		for _, n := range []int{1, 100, 10000} {
			if err := s.Reset(ctx); err != nil {
				b.Fatal(err)
			}
			writeFiles(b, s, n)
			settle(b, s)
			if n == 100 {
				waitRecycled(rt)
				var c *Sandbox
				clone = append(clone, timed(b, func() (err error) { c, err = s.Clone(ctx); return err }))
				c.Close()
				waitRecycled(rt)
			}
			var cp *Checkpoint
			ckpt[n] = append(ckpt[n], timed(b, func() (err error) { cp, err = s.Checkpoint(ctx); return err }))
			settle(b, s)
			waitRecycled(rt)
			// Several branches of each checkpoint, as a search makes: the
			// median is that of a branch, not of freeing the last
			// checkpoint's layer, which the first one after shares the
			// processors with.
			for range 4 {
				var br *Sandbox
				branch[n] = append(branch[n], timed(b, func() (err error) { br, err = s.Branch(ctx, cp); return err }))
				settle(b, br)
				br.Close()
				waitRecycled(rt)
			}
			if n == 100 {
				writeFiles(b, s, 100)
				settle(b, s)
				rollback = append(rollback, timed(b, func() error { return s.Rollback(ctx, cp) }))
				writeFiles(b, s, 100)
				settle(b, s)
				reset = append(reset, timed(b, func() error { return s.Reset(ctx) }))
				settle(b, s)
			}
			held = append(held, cp)
		}
	}
	b.ReportMetric(p50ms(ckpt[1]), "ckpt1_ms")
	b.ReportMetric(p50ms(ckpt[10000]), "ckpt10k_ms")
	b.ReportMetric(p50ratio(ckpt[10000], ckpt[1]), "ckpt10k/ckpt1")
	b.ReportMetric(p50ms(branch[1]), "branch1_ms")
	b.ReportMetric(p50ms(branch[10000]), "branch10k_ms")
	b.ReportMetric(p50ratio(branch[10000], branch[1]), "branch10k/branch1")
	b.ReportMetric(p50ms(branch[100]), "branch100_ms")
	b.ReportMetric(p50ms(clone), "clone100_ms")
	b.ReportMetric(p50ratio(branch[100], clone), "branch100/clone100")
	b.ReportMetric(p50ms(rollback), "rollback_ms")
	b.ReportMetric(p50ms(reset), "reset_ms")
	b.ReportMetric(p50ratio(rollback, reset), "rollback/reset")
}

// BenchmarkBranchShell measures a branch with its bash session, what a
// branch of an episode costs, after 100 changed files, made three ways
// taking turns: Branch then Shell ("apart"), BranchShell's making of one
// ("joint": the session's start sent behind the stack of layers), and
// BranchShell taking the spare made after the last ("spare"). Each is
// timed until the session is there, and until its first command (`true`)
// is done, which is when bash has started. Times are medians; each branch
// takes a warm sandbox whose reset is done, and the spare is made before
// anything is timed.
func BenchmarkBranchShell(b *testing.B) {
	rt, s := benchSandbox(b)
	ctx := context.Background()
	writeFiles(b, s, 100)
	cp, err := s.Checkpoint(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer cp.Release()
	settle(b, s)
	ways := []string{"apart", "joint", "spare"}
	branch := func(way string) (*Sandbox, *Shell, error) {
		switch way {
		case "joint":
			return rt.branchShell(ctx, s.cfg, s.key, cp, ShellOptions{})
		case "spare":
			return s.BranchShell(ctx, cp, ShellOptions{})
		}
		n, err := s.Branch(ctx, cp)
		if err != nil {
			return nil, nil, err
		}
		sh, err := n.Shell(ctx, ShellOptions{})
		if err != nil {
			n.Close()
		}
		return n, sh, err
	}
	ready, first := map[string][]time.Duration{}, map[string][]time.Duration{}
	for i := 0; i < b.N+1; i++ {
		for _, way := range ways {
			// The spare made, and nothing else in the background.
			if err := rt.Settle(ctx); err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			n, sh, err := branch(way)
			if err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if r, err := sh.Run(ctx, "true", 0); err != nil || r.ExitCode != 0 {
				b.Fatalf("the branch's first command: %+v, %v", r, err)
			}
			t2 := time.Now()
			sh.Close()
			n.Close()
			if i > 0 { // the first warms the pool and makes the spare
				ready[way], first[way] = append(ready[way], t1.Sub(t0)), append(first[way], t2.Sub(t0))
			}
		}
	}
	for _, way := range ways {
		b.ReportMetric(p50ms(ready[way]), way+"_ms")
		b.ReportMetric(p50ms(first[way]), way+"_first_ms")
	}
	for _, way := range ways[1:] {
		b.ReportMetric(p50ratio(ready[way], ready["apart"]), way+"/apart")
		b.ReportMetric(p50ratio(first[way], first["apart"]), way+"/apart_first")
	}
}
