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

// BenchmarkCheckpoint measures checkpoints against what they replace, in
// one run, and reports the ratios docs/benchmarks.md quotes: a checkpoint
// and a branch after 10,000 changed files against after 1 (target: within
// 1.2x), a branch against Clone after 100 (target: at most 0.5x), and a
// rollback against Reset (target: no slower). Times are medians.
func BenchmarkCheckpoint(b *testing.B) {
	rt, err := NewRuntime(Options{Home: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	s, err := rt.New(ctx, Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
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
	ms := func(ds []time.Duration) float64 { return float64(p50(ds).Microseconds()) / 1000 }
	ratio := func(a, b []time.Duration) float64 { return float64(p50(a)) / float64(p50(b)) }
	b.ReportMetric(ms(ckpt[1]), "ckpt1_ms")
	b.ReportMetric(ms(ckpt[10000]), "ckpt10k_ms")
	b.ReportMetric(ratio(ckpt[10000], ckpt[1]), "ckpt10k/ckpt1")
	b.ReportMetric(ms(branch[1]), "branch1_ms")
	b.ReportMetric(ms(branch[10000]), "branch10k_ms")
	b.ReportMetric(ratio(branch[10000], branch[1]), "branch10k/branch1")
	b.ReportMetric(ms(branch[100]), "branch100_ms")
	b.ReportMetric(ms(clone), "clone100_ms")
	b.ReportMetric(ratio(branch[100], clone), "branch100/clone100")
	b.ReportMetric(ms(rollback), "rollback_ms")
	b.ReportMetric(ms(reset), "reset_ms")
	b.ReportMetric(ratio(rollback, reset), "rollback/reset")
}
