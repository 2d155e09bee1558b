package sandbox

import (
	"context"
	"os/exec"
	"strconv"
	"sort"
	"testing"
	"time"
)

// bwrapArgs is bubblewrap doing the comparable job: every namespace, the
// host's /usr and /etc read-only, fresh /proc, minimal /dev, private /tmp.
func bwrapArgs(cmd ...string) []string {
	args := []string{"--unshare-all", "--die-with-parent",
		"--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"}
	return append(args, cmd...)
}

func p50(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func BenchmarkStartExecClose(b *testing.B) {
	ctx := context.Background()
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bwrap not installed (make setup installs it)")
	}
	for _, warm := range []int{-1, 8} {
		rt, err := NewRuntime(Options{Home: b.TempDir(), Warm: warm})
		if err != nil {
			b.Fatal(err)
		}
		var cwm, bw []time.Duration
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			s, err := rt.New(ctx, Config{})
			if err != nil {
				b.Fatal(err)
			}
			r, err := s.Exec(ctx, Cmd{Args: []string{"true"}})
			if err != nil || r.ExitCode != 0 {
				b.Fatal(err, r)
			}
			s.Close()
			cwm = append(cwm, time.Since(t0))
			t0 = time.Now()
			if out, err := exec.Command(bwrap, bwrapArgs("true")...).CombinedOutput(); err != nil {
				b.Fatal(err, string(out))
			}
			bw = append(bw, time.Since(t0))
		}
		rt.Close()
		name := "cold"
		if warm > 0 {
			name = "warm"
		}
		b.ReportMetric(float64(p50(cwm).Microseconds())/1000, name+"_p50_ms")
		b.ReportMetric(float64(p50(bw).Microseconds())/1000, name+"_bwrap_p50_ms")
		b.ReportMetric(float64(p50(cwm))/float64(p50(bw)), name+"_ratio")
	}
}

func BenchmarkShellRoundTrip(b *testing.B) {
	ctx := context.Background()
	rt, err := NewRuntime(Options{Home: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	s, err := rt.New(ctx, Config{})
	if err != nil {
		b.Fatal(err)
	}
	sh, err := s.Shell(ctx, ShellOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var ds []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		r, err := sh.Run(ctx, "true", 0)
		if err != nil || r.ExitCode != 0 {
			b.Fatal(err, r)
		}
		ds = append(ds, time.Since(t0))
	}
	b.ReportMetric(float64(p50(ds).Microseconds())/1000, "p50_ms")
}

func BenchmarkReset(b *testing.B) {
	ctx := context.Background()
	rt, err := NewRuntime(Options{Home: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	s, err := rt.New(ctx, Config{})
	if err != nil {
		b.Fatal(err)
	}
	for _, files := range []int{1, 10000} {
		var ds []time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			r, err := s.Exec(ctx, Cmd{Shell: "mkdir -p /tmp/d && cd /tmp/d && seq " + itoa(files) + " | xargs touch"})
			if err != nil || r.ExitCode != 0 {
				b.Fatal(err, r, string(r.Stderr))
			}
			b.StartTimer()
			t0 := time.Now()
			if err := s.Reset(ctx); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
		}
		b.ReportMetric(float64(p50(ds).Microseconds())/1000, "files"+itoa(files)+"_p50_ms")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
