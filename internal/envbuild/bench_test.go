package envbuild

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// BenchmarkEnvTest compares `cwm env test` on the example's environment
// with the same suite run directly on the host (`python3 -m pytest` in a
// copy of the repository), alternating the two in the same run. The
// requirement is cwm <= 1.2 T + 0.3 s, T the direct time (medians). It
// also reports the environment's layer size: what the environment costs
// beyond the base is the repository and what was installed.
//
//	go test -run '^$' -bench EnvTest -benchtime 10x ./internal/envbuild/
func BenchmarkEnvTest(b *testing.B) {
	e := textkitEnv(b)
	bin := filepath.Join(b.TempDir(), "cwm")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/cwm")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	host := copyRepo(b, "../../examples/textkit")
	direct := func() time.Duration {
		cmd := exec.Command("/usr/bin/python3", "-m", "pytest", "-q")
		cmd.Dir = host
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("python3 -m pytest on the host: %v\n%s", err, out)
		}
		return time.Since(start)
	}
	viaCWM := func() time.Duration {
		cmd := exec.Command(bin, "env", "test", e.ID)
		cmd.Env = append(os.Environ(), "CWM_HOME="+testHome)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("cwm env test: %v\n%s", err, out)
		}
		return time.Since(start)
	}
	// One of each first, so neither pays for cold caches.
	direct()
	viaCWM()
	var hostTimes, cwmTimes []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		hostTimes = append(hostTimes, direct())
		cwmTimes = append(cwmTimes, viaCWM())
	}
	b.StopTimer()
	T, C := median(hostTimes).Seconds(), median(cwmTimes).Seconds()
	b.ReportMetric(T, "direct-s")
	b.ReportMetric(C, "cwm-s")
	b.ReportMetric(C/T, "ratio")
	b.ReportMetric(float64(e.LayerBytes)/(1<<20), "layer-MB")
	b.Logf("suite: %d tests; direct %.3fs, cwm env test %.3fs (ratio %.2f, bound 1.2T+0.3 = %.3fs); layer %.2f MB",
		e.Counts.Tests, T, C, C/T, 1.2*T+0.3, float64(e.LayerBytes)/(1<<20))
	if C > 1.2*T+0.3 {
		b.Errorf("cwm env test took %.3fs, over 1.2 T + 0.3 s = %.3fs", C, 1.2*T+0.3)
	}
	if e.LayerBytes >= 5<<20 {
		b.Errorf("layer is %d bytes, want under 5 MB", e.LayerBytes)
	}
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration{}, ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
