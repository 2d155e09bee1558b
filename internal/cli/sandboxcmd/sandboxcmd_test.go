package sandboxcmd

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"cwm/internal/command"
)

// runSandbox runs cwm with only the sandbox commands, in-process, as the
// fast path does, and returns its exit code and output.
func runSandbox(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	p := &command.Program{Commands: Commands}
	code := p.Run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// termOrKill stands for exit status 143 (SIGTERM) or 137 (SIGKILL).
const termOrKill = -1

func TestRunStatus(t *testing.T) {
	t.Setenv("CWM_HOME", t.TempDir())
	cases := []struct {
		name  string
		args  []string
		stdin string
		code  int
		out   string // substring of stdout
		err   string // substring of stderr
	}{
		{"exit status propagates", []string{"sandbox", "run", "--", "sh", "-c", "echo out; echo err >&2; exit 7"}, "", 7, "out\n", "err\n"},
		{"stdin reaches the command", []string{"sandbox", "run", "--", "wc", "-c"}, "12345", 0, "5\n", ""},
		{"json result", []string{"sandbox", "run", "--json", "--", "sh", "-c", "exit 5"}, "", 5, "", `"exit_code":5`},
		{"shell flag", []string{"sandbox", "run", "--shell", "--", "echo", "$((6*7))"}, "", 0, "42\n", ""},
		// SIGTERM at the limit, SIGKILL after its grace: on a loaded
		// machine the command may not have started by the limit.
		{"timeout", []string{"sandbox", "run", "--timeout", "300ms", "--", "sleep", "10"}, "", termOrKill, "", "timeout limit"},
		{"signal", []string{"sandbox", "run", "--", "sh", "-c", "kill -TERM $$"}, "", 128 + 15, "", ""},
		{"not found", []string{"sandbox", "run", "--", "no-such-command"}, "", 127, "", "command not found"},
		{"missing layer", []string{"sandbox", "run", "--layer", "/no/such/layer", "--", "true"}, "", 2, "", "/no/such/layer: no such directory"},
		{"invalid memory", []string{"sandbox", "run", "--memory", "0", "--", "true"}, "", 2, "", "--memory"},
		{"unparsable memory", []string{"sandbox", "run", "--memory", "lots", "--", "true"}, "", 2, "", "invalid size"},
		{"invalid pids", []string{"sandbox", "run", "--pids", "-1", "--", "true"}, "", 2, "", "--pids"},
		{"invalid timeout", []string{"sandbox", "run", "--timeout", "-1s", "--", "true"}, "", 2, "", "--timeout"},
		{"empty command", []string{"sandbox", "run", "--"}, "", 2, "", "no command given"},
		{"empty argv0", []string{"sandbox", "run", "--", ""}, "", 2, "", "empty command"},
		{"bad env", []string{"sandbox", "run", "--env", "NOEQUALS", "--", "true"}, "", 2, "", "want K=V"},
		{"relative workdir", []string{"sandbox", "run", "--workdir", "tmp", "--", "true"}, "", 2, "", "absolute"},
		{"shell from stdin", []string{"sandbox", "shell"}, "cd /tmp; pwd; exit 3\n", 3, "/tmp\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runSandbox(t, c.stdin, c.args...)
			codeOK := code == c.code || c.code == termOrKill && (code == 128+15 || code == 128+9)
			if !codeOK || !strings.Contains(out, c.out) || !strings.Contains(errs, c.err) {
				t.Errorf("cwm %q = %d, stdout %q, stderr %q; want %d, %q, %q", c.args, code, out, errs, c.code, c.out, c.err)
			}
		})
	}
}
