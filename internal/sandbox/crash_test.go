package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests here re-execute the test binary as a separate cwm process: one
// that is killed with SIGKILL while it has sandboxes open, and one that
// runs as an unprivileged user.

const childEnv = "CWM_SANDBOX_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "crash":
		crashChild()
	case "unprivileged":
		unprivilegedChild()
	case "escape":
		escapeChild()
	}
	os.Exit(m.Run())
}

// crashChild opens sandboxes with running commands, says so, and waits to
// be killed.
func crashChild() {
	rt, err := NewRuntime(Options{Home: os.Getenv("CWM_HOME")})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		s, err := rt.New(ctx, Config{})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		if _, err := s.Start(ctx, Cmd{Shell: "echo data > /tmp/f; setsid sleep 1000 & sleep 1000"}); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	}
	fmt.Println("ready")
	select {}
}

func TestCrashRecovery(t *testing.T) {
	home := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=crash", "CWM_HOME="+home)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		cmd.Process.Kill()
		t.Fatalf("child said %q", line)
	}
	childPid := cmd.Process.Pid
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	// The dead process left its run directory and cgroups behind.
	runDirs, _ := filepath.Glob(filepath.Join(home, "run", fmt.Sprintf("p%d-*", childPid)))
	if len(runDirs) != 1 {
		t.Fatalf("run directory of the killed process: %v", runDirs)
	}
	cg := detectCgroups()
	prefix := fmt.Sprintf("cwm-%d-", childPid)
	leftCgroups := func() []string {
		var left []string
		for _, d := range []string{cg.memory, cg.pids, cg.unified} {
			if d == "" {
				continue
			}
			ents, _ := os.ReadDir(d)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), prefix) {
					left = append(left, e.Name())
				}
			}
		}
		return left
	}
	if cg.version != 0 && len(leftCgroups()) == 0 {
		t.Fatalf("expected the killed process's cgroups to remain before reaping")
	}

	var recs []sandboxRecord
	files, _ := filepath.Glob(filepath.Join(runDirs[0], "*", "sandbox.json"))
	for _, f := range files {
		var rec sandboxRecord
		b, _ := os.ReadFile(f)
		if json.Unmarshal(b, &rec) == nil {
			recs = append(recs, rec)
		}
	}
	if len(recs) != 3 {
		t.Fatalf("found %d sandbox records of the killed cwm, want 3", len(recs))
	}

	// The next cwm to start cleans up.
	rt, err := NewRuntime(Options{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, err := os.Stat(runDirs[0]); err == nil {
		t.Errorf("run directory %s still there after the next start", runDirs[0])
	}
	if left := leftCgroups(); len(left) > 0 {
		t.Errorf("cgroups still there after the next start: %v", left)
	}
	for _, rec := range recs {
		if procStart(rec.InitPid) == rec.InitStart && procState(rec.InitPid) != 'Z' {
			t.Errorf("sandbox init %d of the killed cwm is still alive", rec.InitPid)
		}
	}
}

// unprivilegedChild runs sandbox checks as whatever user it was started as
// and prints one line per check.
func unprivilegedChild() {
	ctx := context.Background()
	rt, err := NewRuntime(Options{Home: os.Getenv("CWM_HOME")})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	defer rt.Close()
	v, why := rt.Cgroups()
	fmt.Printf("cgroups %d %s\n", v, why)
	if v == 0 {
		// Without cgroups the memory limit is an rlimit init carries too.
		_, err := rt.New(ctx, Config{Limits: Limits{Memory: 64 << 20}})
		var ce *ConfigError
		fmt.Printf("64 MiB without cgroups => %v %v\n", errors.As(err, &ce), err)
	}
	cfg := Config{Limits: Limits{Memory: 256 << 20, Timeout: 5 * time.Second}}
	s, err := rt.New(ctx, cfg)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	// A listener in the sandbox's loopback reaches cwm as this user too.
	ln, err := listen(ctx, s, 0)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	got := acceptOne(ln)
	if _, err := s.Exec(ctx, Cmd{Shell: fmt.Sprintf("echo listen-ok > /dev/tcp/127.0.0.1/%d", ln.Addr().(*net.TCPAddr).Port)}); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Printf("listen => %s", <-got)
	for _, c := range []string{"id -u", "echo x > /tmp/f && cat /tmp/f", "touch /usr/x 2>/dev/null || echo readonly",
		"python3 -c 'x = bytearray(1 << 30)' 2>/dev/null || echo memory-limited", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"} {
		r, err := s.Exec(ctx, Cmd{Shell: c})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Printf("%s => %s", c, r.Stdout)
		// The same in a one-shot sandbox.
		if r, err = rt.Run(ctx, cfg, Cmd{Shell: c}); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Printf("one-shot %s => %s", c, r.Stdout)
	}
	s.Close()
	os.Exit(0)
}

// unprivileged starts a process as nobody (uid and gid 65534).
func unprivileged() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}

func TestUnprivileged(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to switch to an unprivileged user")
	}
	dir, err := os.MkdirTemp("", "cwm-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "sandbox.test")
	if err := CopyFile(os.Args[0], bin, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(bin, 0o755)
	home := filepath.Join(dir, "home")
	os.Mkdir(home, 0o755)
	os.Chown(home, 65534, 65534)
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = []string{childEnv + "=unprivileged", "CWM_HOME=" + home, LimitsEnv + "=rlimits", "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = unprivileged()
	out, err := cmd.CombinedOutput()
	t.Logf("as uid 65534:\n%s", out)
	if err != nil {
		if strings.Contains(string(out), "user namespaces is not allowed") {
			t.Skipf("unprivileged user namespaces are disabled here: %s", out)
		}
		t.Fatalf("unprivileged run failed: %v", err)
	}
	if strings.Contains(string(out), "cgroups 0 ") && !strings.Contains(string(out), "64 MiB without cgroups => true invalid memory limit") {
		t.Errorf("a 64 MiB limit without cgroups was not refused as a configuration error")
	}
	if !strings.Contains(string(out), "listen => listen-ok\n") {
		t.Errorf("unprivileged output lacks %q: Listen does not work as an ordinary user", "listen => listen-ok")
	}
	for _, want := range []string{"id -u => 0\n", "cat /tmp/f => x\n", "=> readonly\n", "=> memory-limited\n", "tr -d ' ' => lo\n"} {
		if strings.Count(string(out), want) != 2 {
			t.Errorf("unprivileged output lacks %q from New and Exec, or from Run", want)
		}
	}
	// Without usable cgroups, and without asking for rlimits, cwm refuses
	// to start and says what to configure.
	if strings.Contains(string(out), "cgroups 0 ") {
		cmd = exec.Command(bin, "-test.run=^$")
		cmd.Env = []string{childEnv + "=unprivileged", "CWM_HOME=" + home, "PATH=/usr/bin:/bin"}
		cmd.SysProcAttr = unprivileged()
		out, err = cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "no usable cgroups") || !strings.Contains(string(out), LimitsEnv+"=rlimits") {
			t.Errorf("without cgroups and without %s=rlimits: %v, %q; want a refusal saying what to configure", LimitsEnv, err, out)
		}
	}
}
