package command

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	"cwm/internal/errkind"
)

// echoCmd is a command for the dispatcher's tests: it prints its name and
// arguments, or returns the error its -fail flag names.
type echoCmd struct {
	name string
	fail string
}

func (c *echoCmd) Name() string     { return c.name }
func (c *echoCmd) Synopsis() string { return "synopsis of " + c.name }
func (c *echoCmd) Usage() string {
	return "[ARG...]\nLonger description of " + c.name + "."
}
func (c *echoCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.fail, "fail", "", "fail with `KIND`: usage, status, error, input, usage-kind")
}

func (c *echoCmd) Run(_ context.Context, e *Env, args []string) error {
	switch c.fail {
	case "usage":
		return Usagef("bad %s", "arguments")
	case "status":
		return ExitStatus(7)
	case "error":
		return errors.New("it broke")
	case "input":
		return fmt.Errorf("load: %w", errkind.New(errkind.Input, "bad line"))
	case "usage-kind":
		return fmt.Errorf("options: %w", errkind.New(errkind.Usage, "no tasks"))
	}
	e.Stdout.Write([]byte(c.name + ":" + strings.Join(args, ",") + "\n"))
	return nil
}

func testProgram() *Program {
	mk := func(name string) func() Command { return func() Command { return &echoCmd{name: name} } }
	return &Program{
		Help:     "Test program.\n\nCommands:\n",
		Footer:   "\nThe end.\n",
		Commands: []func() Command{mk("version"), mk("box"), mk("box run"), mk("box shell"), mk("alpha")},
	}
}

func TestRun(t *testing.T) {
	t.Setenv("CWM_HOME", t.TempDir())
	cases := []struct {
		args      []string
		code      int
		stdout    string // substring
		stderr    string // substring
		notStderr string
	}{
		{[]string{"box", "run", "a", "b"}, 0, "box run:a,b\n", "", ""},
		{[]string{"box", "x"}, 0, "box:x\n", "", ""},
		{[]string{"alpha", "--", "-fail"}, 0, "alpha:-fail\n", "", ""},
		{[]string{"--version"}, 0, "version:\n", "", ""},
		{[]string{"box", "run", "-fail", "usage"}, 2, "", "cwm box run: bad arguments\n\nUsage: cwm box run [ARG...]", ""},
		{[]string{"box", "run", "-fail", "status"}, 7, "", "", "exit status"},
		{[]string{"box", "run", "-fail", "error"}, 1, "", "cwm box run: it broke\n", "Usage:"},
		{[]string{"box", "run", "-fail", "input"}, 1, "", "cwm box run: load: bad line\n", "Usage:"},
		{[]string{"box", "run", "-fail", "usage-kind"}, 2, "", "cwm box run: options: no tasks\n\nUsage: cwm box run", ""},
		{[]string{"box", "run", "-nosuchflag"}, 2, "", "flag provided but not defined: -nosuchflag\n\nUsage: cwm box run", ""},
		{[]string{"box", "run", "--help"}, 0, "Longer description of box run.\n\nFlags:\n  -fail KIND", "", ""},
		{[]string{}, 2, "", "Test program.", ""},
		{[]string{"--help"}, 0, "  alpha      synopsis of alpha\n  box        synopsis of box\n  box run", "", ""},
		{[]string{"help"}, 0, "The end.", "", ""},
		{[]string{"help", "box", "shell"}, 0, "Usage: cwm box shell [ARG...]\n\nsynopsis of box shell\n", "", ""},
		{[]string{"help", "nope"}, 2, "", `cwm help: unknown command "nope"`, ""},
		{[]string{"nope"}, 2, "", "cwm: unknown command \"nope\"\n\nTest program.", ""},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := testProgram().Run(context.Background(), c.args, strings.NewReader(""), &out, &errb)
		if code != c.code || !strings.Contains(out.String(), c.stdout) || !strings.Contains(errb.String(), c.stderr) ||
			(c.notStderr != "" && strings.Contains(errb.String(), c.notStderr)) {
			t.Errorf("Run(%q) = %d, stdout %q, stderr %q; want %d, %q, %q", c.args, code, out.String(), errb.String(), c.code, c.stdout, c.stderr)
		}
	}
}

func TestGroups(t *testing.T) {
	p := &Program{Commands: testProgram().Commands[2:4]} // box run, box shell: no "box" command
	for _, c := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"box"}, 2, "", "Usage:\n  cwm box COMMAND [flags] [arguments]\n\nCommands:\n  box run    synopsis of box run\n  box shell  synopsis of box shell\n"},
		{[]string{"box", "frob"}, 2, "", "cwm box: unknown command \"frob\"\n\nUsage:"},
		{[]string{"box", "--help"}, 0, "Usage:\n  cwm box COMMAND [flags] [arguments]\n\nCommands:\n  box run", ""},
		{[]string{"box", "-h"}, 0, "Commands:\n  box run", ""},
		{[]string{"help", "box"}, 0, "Run 'cwm help box COMMAND'", ""},
		{[]string{"help", "box", "frob"}, 2, "", `unknown command "box frob"`},
	} {
		var out, errb bytes.Buffer
		code := p.Run(context.Background(), c.args, strings.NewReader(""), &out, &errb)
		if code != c.code || !strings.Contains(out.String(), c.stdout) || !strings.Contains(errb.String(), c.stderr) {
			t.Errorf("Run(%q) = %d, stdout %q, stderr %q; want %d, %q, %q", c.args, code, out.String(), errb.String(), c.code, c.stdout, c.stderr)
		}
	}
}

func TestNewEnv(t *testing.T) {
	t.Setenv("CWM_HOME", "/some/home")
	t.Setenv("CWM_DEBUG", "")
	var errb bytes.Buffer
	e := NewEnv(nil, nil, &errb)
	if e.Home != "/some/home" {
		t.Errorf("Home = %q, want $CWM_HOME", e.Home)
	}
	e.Log.Debug("hidden")
	e.Log.Warn("shown")
	if s := errb.String(); strings.Contains(s, "hidden") || !strings.Contains(s, "shown") {
		t.Errorf("log without CWM_DEBUG: %q", s)
	}
	t.Setenv("CWM_DEBUG", "1")
	errb.Reset()
	NewEnv(nil, nil, &errb).Log.Debug("detail")
	if !strings.Contains(errb.String(), "detail") {
		t.Errorf("log with CWM_DEBUG=1: %q", errb.String())
	}
}
