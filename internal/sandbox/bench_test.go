package sandbox

import (
	"context"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
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

// startExecClose is one measured cycle: a sandbox from rt runs true and is
// closed.
func startExecClose(b *testing.B, rt *Runtime) time.Duration {
	ctx := context.Background()
	t0 := time.Now()
	s, err := rt.New(ctx, Config{})
	if err != nil {
		b.Fatal(err)
	}
	if r, err := s.Exec(ctx, Cmd{Args: []string{"true"}}); err != nil || r.ExitCode != 0 {
		b.Fatal(err, r)
	}
	s.Close()
	return time.Since(t0)
}

// BenchmarkStartExecClose times a sandbox that starts, runs true and is
// closed, from Go, against bwrap in the same run: cold (no reuse: a new
// sandbox init each time), warm (the default runtime, which reuses closed
// sandboxes) and one-shot (Runtime.Run, no sandbox init).
func BenchmarkStartExecClose(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bwrap not installed (make setup installs it)")
	}
	for _, mode := range []struct {
		name string
		warm int
	}{{"cold", -1}, {"warm", 8}, {"oneshot", -1}} {
		rt, err := NewRuntime(Options{Home: b.TempDir(), Warm: mode.warm})
		if err != nil {
			b.Fatal(err)
		}
		cycle := func() time.Duration { return startExecClose(b, rt) }
		if mode.name == "oneshot" {
			cycle = func() time.Duration {
				t0 := time.Now()
				if r, err := rt.Run(context.Background(), Config{}, Cmd{Args: []string{"true"}}); err != nil || r.ExitCode != 0 {
					b.Fatal(err, r)
				}
				return time.Since(t0)
			}
		}
		var cwm, bw []time.Duration
		for i := 0; i < b.N; i++ {
			cwm = append(cwm, cycle())
			t0 := time.Now()
			if out, err := exec.Command(bwrap, bwrapArgs("true")...).CombinedOutput(); err != nil {
				b.Fatal(err, string(out))
			}
			bw = append(bw, time.Since(t0))
		}
		if mode.name == "warm" {
			// The same cycles back to back, nothing in between: a warm
			// sandbox's reset for reuse, which runs in the background
			// after Close, is then waited for by the next New.
			var b2b []time.Duration
			for i := 0; i < b.N; i++ {
				b2b = append(b2b, cycle())
			}
			b.ReportMetric(float64(p50(b2b).Microseconds())/1000, "warm_backtoback_p50_ms")
		}
		rt.Close()
		b.ReportMetric(float64(p50(cwm).Microseconds())/1000, mode.name+"_p50_ms")
		b.ReportMetric(float64(p50(bw).Microseconds())/1000, mode.name+"_bwrap_p50_ms")
		b.ReportMetric(float64(p50(cwm))/float64(p50(bw)), mode.name+"_ratio")
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

// BenchmarkManyOpen opens 200 sandboxes, each holding a shell session that
// answers a command, and reports the resident memory of this process, the
// sandboxes' inits and everything they run: the sum of RSS (shared pages
// counted in every process) and of PSS (shared pages split between them).
func BenchmarkManyOpen(b *testing.B) {
	ctx := context.Background()
	rt, err := NewRuntime(Options{Home: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	const n = 200
	for i := 0; i < b.N; i++ {
		var boxes []*Sandbox
		for j := 0; j < n; j++ {
			s, err := rt.New(ctx, Config{})
			if err != nil {
				b.Fatal(err)
			}
			sess, err := s.Shell(ctx, ShellOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if r, err := sess.Run(ctx, "echo $$", 0); err != nil || r.ExitCode != 0 {
				b.Fatal(err, r)
			}
			boxes = append(boxes, s)
		}
		rss, pss := treeMemory(os.Getpid())
		b.ReportMetric(float64(rss)/(1<<20), "rss_MiB")
		b.ReportMetric(float64(pss)/(1<<20), "pss_MiB")
		for _, s := range boxes {
			s.Close()
		}
	}
}

// treeMemory sums RSS and PSS over pid and all its descendants.
func treeMemory(root int) (rss, pss int64) {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		ppid, _, ok := parseStat(b)
		if ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var walk func(int)
	walk = func(pid int) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				switch f[0] {
				case "Rss:":
					rss += kb << 10
				case "Pss:":
					pss += kb << 10
				}
			}
		}
		for _, c := range children[pid] {
			walk(c)
		}
	}
	walk(root)
	return rss, pss
}
