package sandboxcmd

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// buildCWM builds the cwm binary into a temporary directory.
// buildCWM builds the cwm binary, or takes $CWM_TEST_BINARY when set (a
// machine without Go, such as the test VM).
func buildCWM(tb testing.TB) string {
	tb.Helper()
	if b := os.Getenv("CWM_TEST_BINARY"); b != "" {
		return b
	}
	bin := filepath.Join(tb.TempDir(), "cwm")
	build := exec.Command("go", "build", "-o", bin, "cwm/cmd/cwm")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("build cwm: %v\n%s", err, out)
	}
	return bin
}

// heavy are packages the fast path must finish without initialising. The
// check that the sandbox is the last package to initialise also catches any
// heavy import of this package; this list catches a heavy import of the
// sandbox package (regexp and gopkg.in/yaml.v3 sort before it and would
// initialise first).
var heavy = []string{"github.com/openai", "net/http", "cwm/internal/agent", "gopkg.in/yaml", "regexp"}

// TestFastPath runs the cwm binary with Go's init trace on: the sandbox
// commands must do their work right after cwm/internal/sandbox initialises,
// without the heavy packages, while every other command still gets all of
// cwm.
func TestFastPath(t *testing.T) {
	bin := buildCWM(t)
	home := t.TempDir()
	cwm := func(stdin string, args ...string) (code int, stdout, stderr string) {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Env = append(os.Environ(), "CWM_HOME="+home, "GODEBUG=inittrace=1")
		c.Stdin = strings.NewReader(stdin)
		var out, errb strings.Builder
		c.Stdout, c.Stderr = &out, &errb
		err := c.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("cwm %q: %v", args, err)
		}
		return c.ProcessState.ExitCode(), out.String(), errb.String()
	}
	// inits returns the packages the trace shows initialising, in order.
	inits := func(trace string) []string {
		var out []string
		for _, line := range strings.Split(trace, "\n") {
			if f := strings.Fields(line); len(f) > 2 && f[0] == "init" && strings.HasPrefix(f[2], "@") {
				out = append(out, f[1])
			}
		}
		return out
	}
	heavyIn := func(pkgs []string) []string {
		var out []string
		for _, p := range pkgs {
			for _, h := range heavy {
				if strings.HasPrefix(p, h) {
					out = append(out, p)
				}
			}
		}
		return out
	}

	for _, c := range []struct {
		stdin string
		args  []string
		code  int
		out   string
	}{
		{"", []string{"sandbox", "run", "--", "true"}, 0, ""},
		{"", []string{"sandbox", "run", "--", "sh", "-c", "echo hi; exit 4"}, 4, "hi\n"},
		{"echo $((6*7))\n", []string{"sandbox", "shell"}, 0, "42\n"},
		{"", []string{"sandbox", "run", "--help"}, 0, "Usage: cwm sandbox run"},
	} {
		code, out, errs := cwm(c.stdin, c.args...)
		if code != c.code || !strings.Contains(out, c.out) {
			t.Errorf("cwm %q = %d, stdout %q; want %d, %q\nstderr:\n%s", c.args, code, out, c.code, c.out, errs)
		}
		pkgs := inits(errs)
		if i := slices.Index(pkgs, "cwm/internal/sandbox"); i < 0 {
			t.Errorf("cwm %q: no init trace of cwm/internal/sandbox on stderr:\n%s", c.args, errs)
		} else if after := pkgs[i+1:]; len(after) > 0 {
			t.Errorf("cwm %q initialised %q after cwm/internal/sandbox", c.args, after)
		}
		if h := heavyIn(pkgs); len(h) > 0 {
			t.Errorf("cwm %q initialised heavy packages %q", c.args, h)
		}
	}

	// The full path: everything initialises, and main runs.
	code, out, errs := cwm("", "version")
	if code != 0 || !strings.HasPrefix(out, "cwm ") {
		t.Errorf("cwm version = %d, %q; want 0 and its version\n%s", code, out, errs)
	}
	if len(heavyIn(inits(errs))) == 0 {
		t.Errorf("cwm version: the init trace names none of %q, so it cannot show their absence:\n%s", heavy, errs)
	}
}
