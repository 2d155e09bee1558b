package slurm_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"cwm/internal/envoci/ocitest"
)

// BenchmarkEnvPull measures what pulling the example's environment costs a
// job's task, as the task pays it (the cwm process included), from the
// CNCF Distribution registry on loopback, against the baseline of copying
// its layer with cp -r, in the same run:
//
//   - cold: an empty CWM_HOME (a fresh node): manifest, blobs, unpacking;
//   - cached: the store has it, by tag (one request for the manifest);
//   - by digest: the store has it, by digest (no request at all);
//   - cp -r: the layer directory copied on the same disk.
//
// Reported as medians (ms) and the ratio cold / cp -r; the targets are a
// cached pull under 50 ms and a cold one within 2x of cp -r.
func BenchmarkEnvPull(b *testing.B) {
	reg := ocitest.Start(b, "", "")
	work := b.TempDir()
	textkit, _ := filepath.Abs(filepath.Join(root, "examples", "textkit"))
	builder := []string{"CWM_HOME=" + filepath.Join(work, "builder")}
	id, _ := run(b, builder, "env", "build", "--runs", "1", "--name", "textkit", "--quiet", textkit)
	id = strings.TrimSpace(id)
	pushed, _ := run(b, builder, "env", "push", "textkit", reg.Host+"/cwm/textkit")
	byDigest := strings.TrimSpace(pushed)
	byTag, _, _ := strings.Cut(byDigest, "@")
	layer := filepath.Join(work, "builder", "envs", id, "layer")

	warm := []string{"CWM_HOME=" + filepath.Join(work, "warm")}
	run(b, warm, "env", "pull", byTag)
	var cold, cached, digest, cp []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		home := filepath.Join(work, "cold")
		os.RemoveAll(home)
		_, d := run(b, []string{"CWM_HOME=" + home}, "env", "pull", byTag)
		cold = append(cold, d)
		_, d = run(b, warm, "env", "pull", byTag)
		cached = append(cached, d)
		_, d = run(b, warm, "env", "pull", byDigest)
		digest = append(digest, d)
		dst := filepath.Join(work, "copy")
		os.RemoveAll(dst)
		start := time.Now()
		if out, err := exec.Command("cp", "-r", layer, dst).CombinedOutput(); err != nil {
			b.Fatalf("cp -r: %v\n%s", err, out)
		}
		cp = append(cp, time.Since(start))
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
