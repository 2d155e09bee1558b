package envoci

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/envoci/ocitest"
)

// BenchmarkPull measures Pull itself (in process: no cwm start-up) of the
// example's environment from the CNCF Distribution registry on loopback,
// against cp -r of its layer, in the same run: cold (an empty home),
// cached by tag (one manifest request), cached by digest (none).
// deploy/slurm's BenchmarkEnvPull measures the same through the cwm
// process, as a job's task pays it.
func BenchmarkPull(b *testing.B) {
	reg := ocitest.Start(b, "", "")
	ctx := context.Background()
	src := b.TempDir()
	e, err := envbuild.Build(ctx, env.NewSandboxes(testRT), envbuild.Options{Home: src, Source: "../../examples/textkit", Runs: 1, Name: "textkit"})
	if err != nil {
		b.Fatal(err)
	}
	res, err := Push(ctx, e, reg.Host+"/cwm/textkit", Options{Home: src})
	if err != nil {
		b.Fatal(err)
	}
	byTag := res.Ref[:len(res.Ref)-len(res.Digest)-1]
	byDigest := reg.Host + "/cwm/textkit@" + res.Digest
	work := b.TempDir()
	warm := filepath.Join(work, "warm")
	if _, err := Pull(ctx, env.NewStore(warm), byTag, Options{Home: warm}); err != nil {
		b.Fatal(err)
	}
	var cold, cached, digest, cp []time.Duration
	timeIt := func(into *[]time.Duration, f func() error) {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		*into = append(*into, time.Since(start))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		home := filepath.Join(work, "cold")
		os.RemoveAll(home)
		timeIt(&cold, func() error { _, err := Pull(ctx, env.NewStore(home), byTag, Options{Home: home}); return err })
		timeIt(&cached, func() error { _, err := Pull(ctx, env.NewStore(warm), byTag, Options{Home: warm}); return err })
		timeIt(&digest, func() error { _, err := Pull(ctx, env.NewStore(warm), byDigest, Options{Home: warm}); return err })
		dst := filepath.Join(work, "copy")
		os.RemoveAll(dst)
		timeIt(&cp, func() error { return exec.Command("cp", "-r", e.LayerDir(), dst).Run() })
	}
	b.StopTimer()
	ms := func(ds []time.Duration) float64 {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	b.ReportMetric(ms(cold), "cold-ms")
	b.ReportMetric(ms(cached), "cached-ms")
	b.ReportMetric(ms(digest), "digest-ms")
	b.ReportMetric(ms(cp), "cp-ms")
	b.ReportMetric(ms(cold)/ms(cp), "cold/cp")
	b.ReportMetric(0, "ns/op")
}
