package sandboxcmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// BenchmarkSandboxRunProcess times `cwm sandbox run -- true` as a whole
// process, cwm's own start-up included, against bubblewrap doing the
// comparable job, alternating the two in the same run.
func BenchmarkSandboxRunProcess(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bwrap not installed (make setup installs it)")
	}
	bin := buildCWM(b)
	dir := b.TempDir()
	bwrapArgs := []string{"--unshare-all", "--die-with-parent",
		"--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "true"}
	env := append(os.Environ(), "CWM_HOME="+filepath.Join(dir, "home"))
	var cwm, bw []time.Duration
	for i := 0; i < b.N; i++ {
		c := exec.Command(bin, "sandbox", "run", "--", "true")
		c.Env = env
		t0 := time.Now()
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("cwm sandbox run: %v\n%s", err, out)
		}
		cwm = append(cwm, time.Since(t0))
		t0 = time.Now()
		if out, err := exec.Command(bwrap, bwrapArgs...).CombinedOutput(); err != nil {
			b.Fatalf("bwrap: %v\n%s", err, out)
		}
		bw = append(bw, time.Since(t0))
	}
	pc, pb := median(cwm), median(bw)
	b.ReportMetric(float64(pc.Microseconds())/1000, "cwm_p50_ms")
	b.ReportMetric(float64(pb.Microseconds())/1000, "bwrap_p50_ms")
	b.ReportMetric(float64(pc)/float64(pb), "ratio")
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
