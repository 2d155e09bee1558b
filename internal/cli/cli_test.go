package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// runCLI runs cwm in-process and returns its exit code and output.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelpAndVersion(t *testing.T) {
	t.Setenv("CWM_HOME", t.TempDir())
	cases := []struct {
		args []string
		code int
		out  string // substring of stdout+stderr
	}{
		{[]string{"--help"}, 0, "sandbox run"},
		{[]string{"help"}, 0, "Commands:"},
		{[]string{"help", "sandbox", "run"}, 0, "Usage: cwm sandbox run"},
		{[]string{"sandbox", "run", "--help"}, 0, "-memory"},
		{[]string{"help", "sandbox"}, 0, "sandbox shell"},
		{[]string{"version"}, 0, "cwm "},
		{[]string{}, 2, "Usage:"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"sandbox"}, 2, "sandbox run"},
		{[]string{"sandbox", "frob"}, 2, `unknown command "frob"`},
		{[]string{"version", "extra"}, 2, "takes no arguments"},
	}
	for _, c := range cases {
		code, out, errs := runCLI(t, "", c.args...)
		if code != c.code || !strings.Contains(out+errs, c.out) {
			t.Errorf("cwm %q = %d, %q; want %d and %q", c.args, code, out+errs, c.code, c.out)
		}
	}
}
