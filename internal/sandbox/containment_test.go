package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"cwm/internal/testtime"
)

// sandboxProcs lists the processes in the sandbox's cgroup, from the host.
func sandboxProcs(t *testing.T, s *Sandbox) []string {
	t.Helper()
	if s.cg == nil {
		t.Skip("no cgroups on this host")
	}
	b, err := os.ReadFile(filepath.Join(s.cg.dirs[len(s.cg.dirs)-1], "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// containmentCases are commands that misbehave, each with the limit that
// must stop it.
var containmentCases = []struct {
	name   string
	cmd    string
	limits Limits
	want   Reason
	within time.Duration
}{
	{"fork bomb", "b() { b | b & }; b; sleep 100", Limits{Pids: 64, Timeout: 30 * time.Second}, ReasonPids, 10 * time.Second},
	{"memory hog", "python3 -c 'x = bytearray(1 << 30); x[::4096] = b\"x\" * len(x[::4096])'", Limits{Memory: 64 << 20}, ReasonMemory, 10 * time.Second},
	{"infinite loop", "while :; do :; done", Limits{Timeout: time.Second}, ReasonTimeout, 5 * time.Second},
	{"gigabytes to stdout", "head -c 5G /dev/zero", Limits{Output: 32 << 20}, ReasonOutput, 10 * time.Second},
	{"ignores SIGTERM", "trap '' TERM; while :; do sleep 0.1; done", Limits{Timeout: time.Second}, ReasonTimeout, 5 * time.Second},
	{"daemonised grandchild", "setsid bash -c 'sleep 1000 & disown' & (sleep 1000 &) ; trap '' TERM; sleep 1000", Limits{Timeout: time.Second}, ReasonTimeout, 5 * time.Second},
	{"cpu time", "python3 -c 'while True: pass'", Limits{CPU: time.Second, Timeout: 20 * time.Second}, ReasonCPU, 10 * time.Second},
	{"file size", "head -c 10M /dev/zero > /tmp/big", Limits{FileSize: 1 << 20}, ReasonFileSize, 10 * time.Second},
}

func TestContainment(t *testing.T) {
	rt := newRuntime(t, Options{})
	if v, why := rt.Cgroups(); v == 0 {
		t.Skipf("no cgroups: %s", why)
	}
	for _, c := range containmentCases {
		t.Run(c.name, func(t *testing.T) {
			s := newSandbox(t, rt, Config{Limits: c.limits})
			done := make(chan struct{})
			hostOK := make(chan time.Duration, 1)
			go func() {
				// The host stays responsive while the sandbox misbehaves.
				time.Sleep(300 * time.Millisecond)
				t0 := time.Now()
				exec.Command("/bin/true").Run()
				hostOK <- time.Since(t0)
				close(done)
			}()
			t0 := time.Now()
			r, err := s.Exec(context.Background(), Cmd{Shell: c.cmd})
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(t0); d > testtime.Scale(c.within) {
				t.Errorf("stopped after %v, want within %v", d, testtime.Scale(c.within))
			}
			if r.Reason != c.want {
				t.Errorf("reason = %q (%s), want %q; stderr %q", r.Reason, r.Describe(), c.want, r.Stderr)
			}
			<-done
			if d := <-hostOK; d > testtime.Scale(2*time.Second) {
				t.Errorf("a host command took %v while the sandbox ran", d)
			}
			if procs := sandboxProcs(t, s); len(procs) != 1 {
				t.Errorf("processes left in the sandbox after the command: %v (want init only)", procs)
			}
		})
	}
}

func TestDaemonsAreReaped(t *testing.T) {
	rt := newRuntime(t, Options{})
	s := newSandbox(t, rt, Config{})
	// The command returns at once; what it started in the background,
	// including a double-forked daemon in its own session, is killed.
	r := sh(t, s, "setsid bash -c 'sleep 1000 &' ; (sleep 1000 &); nohup sleep 1000 >/dev/null 2>&1 & echo started")
	if string(r.Stdout) != "started\n" {
		t.Fatalf("stdout %q", r.Stdout)
	}
	// Only bash builtins: the listing must see init and itself alone.
	r = sh(t, s, "echo /proc/[0-9]*")
	if f := strings.Fields(string(r.Stdout)); len(f) != 2 || f[0] != "/proc/1" {
		t.Errorf("processes in the sandbox after the command: %q, want init and the listing shell", r.Stdout)
	}
}

// TestNoLeaks: many sandboxes, sequentially and at once, leave no process,
// mount, cgroup or directory behind.
func TestNoLeaks(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	home := t.TempDir()
	ctx := context.Background()
	for _, warm := range []int{-1, 8} {
		rt, err := NewRuntime(Options{Home: home, Warm: warm})
		if err != nil {
			t.Fatal(err)
		}
		n := 1000
		if warm < 0 {
			n = 100 // cold starts: slower, and the same code path each time
		}
		t0 := time.Now()
		for i := 0; i < n; i++ {
			s, err := rt.New(ctx, Config{})
			if err != nil {
				t.Fatal(err)
			}
			if r, err := s.Exec(ctx, Cmd{Args: []string{"true"}}); err != nil || r.ExitCode != 0 {
				t.Fatalf("cycle %d: %v %+v", i, err, r)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("warm=%d: %d sequential cycles in %v", warm, n, time.Since(t0))
		t0 = time.Now()
		var open []*Sandbox
		for i := 0; i < 100; i++ {
			s, err := rt.New(ctx, Config{})
			if err != nil {
				t.Fatal(err)
			}
			open = append(open, s)
		}
		for i, s := range open {
			if r, err := s.Exec(ctx, Cmd{Shell: "echo " + strconv.Itoa(i)}); err != nil || string(r.Stdout) != strconv.Itoa(i)+"\n" {
				t.Fatalf("sandbox %d: %v %q", i, err, r.Stdout)
			}
		}
		for _, s := range open {
			s.Close()
		}
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("warm=%d: 100 open at once in %v", warm, time.Since(t0))
		assertNothingLeft(t, home)
	}
}

// assertNothingLeft checks that no sandbox process, cgroup, mount or run
// directory remains.
func assertNothingLeft(t *testing.T, home string) {
	t.Helper()
	if procs := initProcesses(); len(procs) > 0 {
		t.Errorf("sandbox processes left: %v", procs)
	}
	run := filepath.Join(home, "run")
	ents, _ := os.ReadDir(run)
	for _, e := range ents {
		// mnt, the empty directory every sandbox mounts its root on in
		// its own namespace, stays.
		if e.Name() != "mnt" {
			t.Errorf("left in the run directory: %s", e.Name())
		}
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mi), home) {
		t.Errorf("mounts left under %s", home)
	}
	cg := detectCgroups()
	for _, d := range []string{cg.memory, cg.pids, cg.unified} {
		if d == "" {
			continue
		}
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), cgroupPrefix()) {
				t.Errorf("cgroup left: %s/%s", d, e.Name())
			}
		}
	}
}

// initProcesses lists host processes that are sandbox inits.
func initProcesses() []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if strings.HasPrefix(string(b), initArg0) && procPPid(e.Name()) == os.Getpid() {
			out = append(out, e.Name())
		}
	}
	return out
}

func procPPid(pid string) int {
	b, _ := os.ReadFile("/proc/" + pid + "/stat")
	ppid, _, _ := parseStat(b)
	return ppid
}
