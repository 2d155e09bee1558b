package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cwm/internal/testtime"
)

// runOnce runs cmd with Runtime.Run and fails the test if it cannot run.
func runOnce(t *testing.T, rt *Runtime, cfg Config, cmd Cmd) Result {
	t.Helper()
	r, err := rt.Run(context.Background(), cfg, cmd)
	if err != nil {
		t.Fatalf("Run(%q): %v", cmd.Shell+strings.Join(cmd.Args, " "), err)
	}
	return r
}

// assertNoSandboxes checks that no sandbox of rt left a directory, a cgroup
// or a process. The warm sandboxes an unprivileged cwm's Run keeps for its
// next call (its path with an init closes into the warm pool) are closed
// first: they are the runtime's, gone with it, not left behind.
func assertNoSandboxes(t *testing.T, rt *Runtime) {
	t.Helper()
	dropWarm(rt)
	ents, _ := os.ReadDir(rt.dir)
	for _, e := range ents {
		if e.Name() != "lock" {
			t.Errorf("left in the run directory: %s", e.Name())
		}
	}
	for _, parent := range []string{rt.cg.memory, rt.cg.pids, rt.cg.unified} {
		if parent == "" {
			continue
		}
		ms, _ := filepath.Glob(filepath.Join(parent, cgroupPrefix()+"*"))
		for _, m := range ms {
			t.Errorf("cgroup left: %s", m)
		}
	}
	if out, _ := exec.Command("pgrep", "-f", "^sleep 1000").Output(); len(out) > 0 {
		t.Errorf("processes left: %s", out)
	}
}

func TestRun(t *testing.T) {
	rt := newRuntime(t, Options{})
	ctx := context.Background()
	cfg := Config{Env: []string{"A=1"}, Workdir: "/tmp", Hostname: "box"}
	r := runOnce(t, rt, cfg, Cmd{Shell: "echo out; echo err >&2; id -u; hostname; pwd; echo $A$B; p=(/proc/[0-9]*); echo ${#p[@]}; exit 3",
		Env: []string{"B=2"}})
	if r.ExitCode != 3 || string(r.Stdout) != "out\n0\nbox\n/tmp\n12\n2\n" || string(r.Stderr) != "err\n" {
		// Two processes: pid 1 and bash; never a host process.
		t.Errorf("got exit %d, stdout %q, stderr %q", r.ExitCode, r.Stdout, r.Stderr)
	}
	if r.StdoutBytes != int64(len(r.Stdout)) || r.Duration <= 0 || r.Reason != ReasonNone {
		t.Errorf("result %+v", r)
	}
	// The command is not pid 1: signals it does not handle kill it.
	r = runOnce(t, rt, Config{}, Cmd{Shell: "echo $$; kill -TERM $$; echo survived"})
	if r.Signal.String() != "terminated" || strings.Contains(string(r.Stdout), "survived") || string(r.Stdout) == "1\n" {
		t.Errorf("kill -TERM $$: signal %v, stdout %q", r.Signal, r.Stdout)
	}
	r = runOnce(t, rt, Config{}, Cmd{Args: []string{"wc", "-c"}, Stdin: strings.NewReader("12345")})
	if string(r.Stdout) != "5\n" {
		t.Errorf("stdin from a reader: %q", r.Stdout)
	}
	f, _ := os.Open("/etc/hostname")
	defer f.Close()
	want, _ := os.ReadFile("/etc/hostname")
	r = runOnce(t, rt, Config{}, Cmd{Args: []string{"cat"}, Stdin: f})
	if string(r.Stdout) != string(want) {
		t.Errorf("stdin from a file: %q, want %q", r.Stdout, want)
	}
	// Errors that mean the command could not run at all.
	for _, c := range []struct {
		cmd  Cmd
		cfg  Config
		want string
	}{
		{Cmd{Args: []string{"no-such-command"}}, Config{}, "no-such-command: command not found"},
		{Cmd{Args: []string{"/no/such/file"}}, Config{}, "start /no/such/file: no such file or directory"},
		{Cmd{Args: []string{"true"}, Dir: "/no/such/dir"}, Config{}, "workdir /no/such/dir: no such file or directory"},
		{Cmd{}, Config{}, ErrEmptyCommand.Error()},
	} {
		_, err := rt.Run(ctx, c.cfg, c.cmd)
		if err == nil || err.Error() != c.want {
			t.Errorf("Run(%v): error %v, want %q", c.cmd.Args, err, c.want)
		}
	}
	var ce *ConfigError
	if _, err := rt.Run(ctx, Config{Layers: []string{"/no/such/layer"}}, Cmd{Args: []string{"true"}}); !errors.As(err, &ce) {
		t.Errorf("missing layer: %v, want a ConfigError", err)
	}
	// Cancelling stops the command.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	r, err := rt.Run(cctx, Config{}, Cmd{Args: []string{"sleep", "1000"}})
	if err != nil || r.Reason != ReasonCancelled || time.Since(t0) > testtime.Scale(5*time.Second) {
		t.Errorf("cancelled run: %+v, %v after %v", r, err, time.Since(t0))
	}
	assertNoSandboxes(t, rt)
}

func TestRunIsolation(t *testing.T) {
	home := t.TempDir()
	secret := filepath.Join(home, "secret-in-store")
	os.WriteFile(secret, []byte("s3cret"), 0o600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	rt := newRuntime(t, Options{Home: home})
	// Each line must fail inside the sandbox.
	mustFail := []string{
		"echo x > /usr/cwm-test", "echo x > /etc/cwm-test", "ls -d " + home, "cat " + secret, "ls -d /work",
		fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", port), "timeout 2 bash -c 'exec 3<>/dev/tcp/10.255.255.1/80'",
		fmt.Sprintf("kill -0 %d", os.Getpid()), "cat /proc/1/environ", "ls /proc/1/root/", "head -c1 /proc/1/maps", "head -c1 /proc/1/mem",
		"unshare -U true", "unshare -m true", "mount -t tmpfs x /mnt", "chroot / true",
	}
	var script strings.Builder
	for i, c := range mustFail {
		fmt.Fprintf(&script, "if ( %s ) >/dev/null 2>&1; then echo 'succeeded %d'; fi\n", c, i)
	}
	script.WriteString("echo x > /root/f; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; echo done")
	r := runOnce(t, rt, Config{}, Cmd{Shell: script.String()})
	if got := string(r.Stdout); got != "lo\ndone\n" {
		for _, l := range strings.Split(got, "\n") {
			var i int
			if _, err := fmt.Sscanf(l, "succeeded %d", &i); err == nil {
				t.Errorf("%q succeeded in the sandbox", mustFail[i])
			}
		}
		t.Errorf("stdout %q, want only lo and done (stderr %q)", got, r.Stderr)
	}
	for _, p := range []string{"/usr/cwm-test", "/etc/cwm-test", "/root/f"} {
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("%s written in the sandbox reached the host", p)
		}
	}
	assertNoSandboxes(t, rt)
}

func TestRunContainment(t *testing.T) {
	rt := newRuntime(t, Options{})
	if v, why := rt.Cgroups(); v == 0 {
		t.Skipf("no cgroups: %s", why)
	}
	for _, c := range containmentCases {
		t.Run(c.name, func(t *testing.T) {
			t0 := time.Now()
			r := runOnce(t, rt, Config{Limits: c.limits}, Cmd{Shell: c.cmd})
			if d := time.Since(t0); d > testtime.Scale(c.within) {
				t.Errorf("stopped after %v, want within %v", d, testtime.Scale(c.within))
			}
			if r.Reason != c.want {
				t.Errorf("reason = %q (%s), want %q; stderr %q", r.Reason, r.Describe(), c.want, r.Stderr)
			}
			assertNoSandboxes(t, rt)
		})
	}
}

// TestRunNoLeaks: many one-shot sandboxes leave no process, mount, cgroup
// or directory, and the host's mount table is as before.
func TestRunNoLeaks(t *testing.T) {
	home := t.TempDir()
	rt := newRuntime(t, Options{Home: home})
	before, _ := os.ReadFile("/proc/self/mountinfo")
	for i := 0; i < 200; i++ {
		if r := runOnce(t, rt, Config{}, Cmd{Args: []string{"true"}}); r.ExitCode != 0 {
			t.Fatalf("run %d: %+v", i, r)
		}
	}
	after, _ := os.ReadFile("/proc/self/mountinfo")
	if len(strings.Split(string(before), "\n")) != len(strings.Split(string(after), "\n")) {
		t.Errorf("host mounts changed:\n%s\n---\n%s", before, after)
	}
	assertNoSandboxes(t, rt)
	rt.Close()
	assertNothingLeft(t, home)
}

// TestRunConcurrent: one-shot sandboxes started at the same time from one
// process keep their input and output apart, and a sandbox that runs long
// does not hold up the others (each pid 1 drops the copies it got of the
// other sandboxes' pipes).
func TestRunConcurrent(t *testing.T) {
	rt := newRuntime(t, Options{})
	long := make(chan error, 1)
	go func() {
		_, err := rt.Run(context.Background(), Config{}, Cmd{Args: []string{"sleep", "5"}})
		long <- err
	}()
	const n = 12
	errs := make(chan error, n)
	t0 := time.Now()
	for i := 0; i < n; i++ {
		go func() {
			in := fmt.Sprintf("input %d\n", i)
			r, err := rt.Run(context.Background(), Config{}, Cmd{Shell: "cat; echo $X", Env: []string{fmt.Sprintf("X=%d", i)},
				Stdin: strings.NewReader(in)})
			switch {
			case err != nil:
				errs <- err
			case string(r.Stdout) != fmt.Sprintf("%s%d\n", in, i):
				errs <- fmt.Errorf("run %d: stdout %q", i, r.Stdout)
			default:
				errs <- nil
			}
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if d := time.Since(t0); d > testtime.Scale(4*time.Second) {
		t.Errorf("%d short runs beside a long one took %v", n, d)
	}
	if err := <-long; err != nil {
		t.Error(err)
	}
	assertNoSandboxes(t, rt)
}

// dropWarm destroys rt's warm sandboxes, as the janitor does once they
// have been idle too long.
func dropWarm(rt *Runtime) {
	rt.mu.Lock()
	var warm []*Sandbox
	for k, list := range rt.idle {
		warm = append(warm, list...)
		delete(rt.idle, k)
	}
	rt.mu.Unlock()
	for _, s := range warm {
		if s.recycled != nil {
			<-s.recycled
		}
		s.destroy()
	}
}
