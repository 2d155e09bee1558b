package sandbox

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// newRuntime returns a runtime in a fresh home that the test closes.
func newRuntime(t testing.TB, opts Options) *Runtime {
	t.Helper()
	if opts.Home == "" {
		opts.Home = t.TempDir()
	}
	rt, err := NewRuntime(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func newSandbox(t testing.TB, rt *Runtime, cfg Config) *Sandbox {
	t.Helper()
	s, err := rt.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sh runs a bash command line and fails the test if it cannot run.
func sh(t testing.TB, s *Sandbox, cmd string) Result {
	t.Helper()
	r, err := s.Exec(context.Background(), Cmd{Shell: cmd})
	if err != nil {
		t.Fatalf("Exec(%q): %v", cmd, err)
	}
	return r
}

func TestExecBasics(t *testing.T) {
	rt := newRuntime(t, Options{})
	s := newSandbox(t, rt, Config{Workdir: "/tmp", Env: []string{"GREETING=hi"}})
	ctx := context.Background()

	if r := sh(t, s, "pwd"); string(r.Stdout) != "/tmp\n" {
		t.Errorf("default workdir = %q, want /tmp", r.Stdout)
	}
	r, err := s.Exec(ctx, Cmd{Shell: `echo "$GREETING $EXTRA from $(pwd)"; echo oops >&2; exit 3`, Env: []string{"EXTRA=there"}, Dir: "/"})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Stdout) != "hi there from /\n" || string(r.Stderr) != "oops\n" || r.ExitCode != 3 || r.Reason != ReasonNone {
		t.Errorf("Exec = stdout %q stderr %q code %d reason %q", r.Stdout, r.Stderr, r.ExitCode, r.Reason)
	}
	r, err = s.Exec(ctx, Cmd{Args: []string{"cat"}, Stdin: strings.NewReader("piped input")})
	if err != nil || string(r.Stdout) != "piped input" {
		t.Errorf("cat with stdin = %q, %v", r.Stdout, err)
	}
	r = sh(t, s, "kill -SEGV $$")
	if r.Signal.String() != "segmentation fault" || r.ExitCode != -1 {
		t.Errorf("killed by SEGV: signal %v code %d", r.Signal, r.ExitCode)
	}
	if _, err := s.Exec(ctx, Cmd{Args: []string{"no-such-command"}}); err == nil || !strings.Contains(err.Error(), "command not found") {
		t.Errorf("Exec(no-such-command) error = %v, want command not found", err)
	}
	if _, err := s.Exec(ctx, Cmd{Args: []string{"true"}, Dir: "/no/such/dir"}); err == nil || !strings.Contains(err.Error(), "workdir") {
		t.Errorf("Exec with missing workdir error = %v", err)
	}
	if _, err := s.Exec(ctx, Cmd{}); !errors.Is(err, ErrEmptyCommand) {
		t.Errorf("Exec(empty) error = %v, want ErrEmptyCommand", err)
	}
}

func TestCaptureKeepsHeadAndTail(t *testing.T) {
	rt := newRuntime(t, Options{})
	s := newSandbox(t, rt, Config{})
	r, err := s.Exec(context.Background(), Cmd{Shell: "echo START; head -c 100000 /dev/zero | tr '\\0' x; echo; echo END", Capture: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := string(r.Stdout)
	if !strings.HasPrefix(out, "START\n") || !strings.HasSuffix(out, "\nEND\n") || !strings.Contains(out, "bytes dropped") {
		t.Errorf("captured output does not keep head, tail and a marker: %q...%q", out[:40], out[len(out)-40:])
	}
	if r.StdoutBytes != 100000+6+1+4 {
		t.Errorf("StdoutBytes = %d, want %d", r.StdoutBytes, 100011)
	}
}

func TestFiles(t *testing.T) {
	rt := newRuntime(t, Options{})
	s := newSandbox(t, rt, Config{Workdir: "/tmp"})
	ctx := context.Background()
	if err := s.WriteFile(ctx, "a.txt", []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := sh(t, s, "stat -c %a /tmp/a.txt; cat /tmp/a.txt"); string(r.Stdout) != "600\nhello" {
		t.Errorf("file written by WriteFile seen as %q", r.Stdout)
	}
	b, err := s.ReadFile(ctx, "/tmp/a.txt", 0)
	if err != nil || string(b) != "hello" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	if err := s.CreateFile(ctx, "/tmp/a.txt", nil, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CreateFile over an existing file: %v, want ErrExist", err)
	}
	if _, err := s.ReadFile(ctx, "/tmp/missing", 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v, want ErrNotExist", err)
	}
	if _, err := s.ReadFile(ctx, "/tmp/a.txt", 2); err == nil {
		t.Errorf("ReadFile over its limit succeeded")
	}
	st, err := s.Stat(ctx, "/usr/bin")
	if err != nil || !st.IsDir {
		t.Errorf("Stat(/usr/bin) = %+v, %v", st, err)
	}
	big := strings.Repeat("0123456789", 100000)
	if err := s.WriteFile(ctx, "/tmp/big", []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := s.ReadFile(ctx, "/tmp/big", 0); err != nil || string(b) != big {
		t.Errorf("1 MB round trip through WriteFile/ReadFile failed: %v", err)
	}
}

func TestResetAndClone(t *testing.T) {
	rt := newRuntime(t, Options{})
	s := newSandbox(t, rt, Config{})
	ctx := context.Background()

	sh(t, s, "echo before > /tmp/f; mkdir -p /root/d; echo x > /root/d/g")
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if r := sh(t, s, "ls -A /tmp /root"); strings.Contains(string(r.Stdout), "f") || strings.Contains(string(r.Stdout), "d") {
		t.Errorf("after Reset, earlier writes remain: %q", r.Stdout)
	}
	if ch, _ := s.Changes(); len(ch) != 0 {
		t.Errorf("after Reset, Changes() = %v, want none", ch)
	}

	sh(t, s, "echo parent > /tmp/p")
	c, err := s.Clone(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r := sh(t, c, "cat /tmp/p"); string(r.Stdout) != "parent\n" {
		t.Errorf("clone sees %q in /tmp/p, want parent's file", r.Stdout)
	}
	sh(t, c, "echo child > /tmp/c; echo changed > /tmp/p")
	sh(t, s, "echo later > /tmp/l")
	if r := sh(t, s, "cat /tmp/p; ls /tmp"); strings.Contains(string(r.Stdout), "changed") || strings.Contains(string(r.Stdout), "c\n") {
		t.Errorf("parent sees the clone's writes: %q", r.Stdout)
	}
	if r := sh(t, c, "ls /tmp"); strings.Contains(string(r.Stdout), "l\n") {
		t.Errorf("clone sees the parent's later writes: %q", r.Stdout)
	}
}

func TestChanges(t *testing.T) {
	layer := t.TempDir()
	os.MkdirAll(filepath.Join(layer, "repo/pkg"), 0o755)
	for name, content := range map[string]string{"repo/a.py": "a\n", "repo/b.py": "b\n", "repo/c.py": "c\n", "repo/pkg/x.py": "x\n"} {
		os.WriteFile(filepath.Join(layer, name), []byte(content), 0o644)
	}
	rt := newRuntime(t, Options{})
	s := newSandbox(t, rt, Config{Layers: []string{layer}, Workdir: "/repo"})
	sh(t, s, "echo A > a.py; rm b.py; touch c.py; echo new > n.py; rm -r pkg; mkdir pkg; echo y > pkg/y.py")
	got, err := s.Changes()
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{{"/repo/a.py", Modified}, {"/repo/b.py", Deleted}, {"/repo/n.py", Added},
		{"/repo/pkg/x.py", Deleted}, {"/repo/pkg/y.py", Added}}
	if len(got) != len(want) {
		t.Fatalf("Changes() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Changes()[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if b, _ := os.ReadFile(filepath.Join(layer, "repo/a.py")); string(b) != "a\n" {
		t.Errorf("the layer itself was modified: a.py = %q", b)
	}

	snap := filepath.Join(t.TempDir(), "snap")
	if err := s.Snapshot(snap); err != nil {
		t.Fatal(err)
	}
	s2 := newSandbox(t, rt, Config{Layers: []string{snap, layer}, Workdir: "/repo"})
	if r := sh(t, s2, "cat a.py; ls; ls pkg"); string(r.Stdout) != "A\na.py\nc.py\nn.py\npkg\ny.py\n" {
		t.Errorf("sandbox on the snapshot sees %q", r.Stdout)
	}
	// A file keeps its modification time (bytecode caches are keyed by it).
	sh(t, s, "touch -d 2001-02-03T04:05:06Z n.py")
	snap2 := filepath.Join(t.TempDir(), "snap")
	if err := s.Snapshot(snap2); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(snap2, "repo", "n.py")); err != nil || st.ModTime().UTC() != time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC) {
		t.Errorf("the snapshot's n.py: %v, modified %v; want 2001-02-03T04:05:06Z", err, st.ModTime())
	}
}

func TestShell(t *testing.T) {
	rt := newRuntime(t, Options{})
	s := newSandbox(t, rt, Config{Workdir: "/tmp"})
	ctx := context.Background()
	sess, err := s.Shell(ctx, ShellOptions{MaxOutput: 10000})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	steps := []struct {
		cmd  string
		out  string
		code int
	}{
		{"mkdir -p /tmp/w && cd /tmp/w && export V=persisted", "", 0},
		{"pwd; echo $V", "/tmp/w\npersisted\n", 0},
		{"f() { echo \"fn $1\"; }; f one", "fn one\n", 0},
		{"f two; ls /nonexistent", "fn two\nls: cannot access '/nonexistent': No such file or directory\n", 2},
		{"echo 'quotes \" and '\\'' and $V'", "quotes \" and ' and $V\n", 0},
		{"printf 'no newline'", "no newline", 0},
		{"cat", "", 0}, // stdin is /dev/null: does not hang
		{"for i in 1 2; do\n  echo line $i\ndone", "line 1\nline 2\n", 0},
	}
	for _, st := range steps {
		r, err := sess.Run(ctx, st.cmd, 10*time.Second)
		if err != nil {
			t.Fatalf("Run(%q): %v", st.cmd, err)
		}
		if r.Output != st.out || r.ExitCode != st.code || r.Restarted {
			t.Errorf("Run(%q) = %q, code %d, restarted %v; want %q, code %d", st.cmd, r.Output, r.ExitCode, r.Restarted, st.out, st.code)
		}
	}
	if r, _ := sess.Run(ctx, "if then", time.Second); !strings.Contains(r.Output, "syntax error") || r.ExitCode != 2 || r.Restarted {
		t.Errorf("Run(syntax error) = %+v, want bash's message and status 2 without a restart", r)
	}
	restarts := []struct {
		cmd    string
		reason Reason
		msg    string
	}{
		{"sleep 100", ReasonTimeout, MsgTimeout},
		{"exit 7", ReasonExited, MsgExited},
		{"yes", ReasonOutput, MsgTooMuchOut},
	}
	for _, rs := range restarts {
		r, err := sess.Run(ctx, "cd /; "+rs.cmd, time.Second)
		if err != nil {
			t.Fatalf("Run(%q): %v", rs.cmd, err)
		}
		if !r.Restarted || r.Reason != rs.reason || r.Message != rs.msg {
			t.Errorf("Run(%q) = restarted %v reason %q message %q; want reason %q, CWM's message", rs.cmd, r.Restarted, r.Reason, r.Message, rs.reason)
		}
		if r, _ := sess.Run(ctx, "pwd; echo ${V:-unset}", time.Second); r.Output != "/tmp\nunset\n" {
			t.Errorf("after restart (%s) the session is at %q, want a fresh one in the start directory", rs.reason, r.Output)
		}
	}
}

// A queued command runs before the next Run's, silently: its state stays,
// its output, status and stdin do not reach the Run.
func TestShellQueue(t *testing.T) {
	rt := newRuntime(t, Options{})
	s := newSandbox(t, rt, Config{Workdir: "/tmp"})
	ctx := context.Background()
	sess, err := s.Shell(ctx, ShellOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if err := sess.Queue("echo noise; echo err >&2; cat; declare -x Q='it''s'\ncd /etc; false"); err != nil {
		t.Fatal(err)
	}
	r, err := sess.Run(ctx, "echo $?; pwd; echo \"$Q\"", 10*time.Second)
	if err != nil || r.Output != "0\n/etc\nits\n" || r.Restarted {
		t.Errorf("Run after Queue = %+v, %v; want the queued state without its output or status", r, err)
	}
	if _, err := sess.Run(ctx, "exit 3", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := sess.Queue("cd /etc"); err != nil {
		t.Fatalf("Queue on the restarted session: %v", err)
	}
	if r, _ := sess.Run(ctx, "pwd", time.Second); r.Output != "/etc\n" {
		t.Errorf("Queue on the restarted session: pwd = %q", r.Output)
	}
}

func TestBashQuote(t *testing.T) {
	for _, s := range []string{"", "plain", "it's", `back\slash`, "nl\nand\ttab", "\x01\x7f", "ünïcødé", `$(rm -rf /)`, "'; exit; '"} {
		rt := bashQuote(s)
		if !strings.HasPrefix(rt, "$'") || !strings.HasSuffix(rt, "'") {
			t.Errorf("bashQuote(%q) = %s", s, rt)
		}
	}
}
