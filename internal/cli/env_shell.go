package cli

import (
	"context"
	"flag"
	"os"

	"golang.org/x/term"

	"cwm/internal/sandbox"
)

type envShellCmd struct{}

func (*envShellCmd) name() string     { return "env shell" }
func (*envShellCmd) synopsis() string { return "open bash in a sandbox on an environment" }
func (*envShellCmd) usage() string {
	return `ID
Opens bash in /repo of a fresh sandbox on the environment, with its virtual
environment first on PATH. Changes are private to the sandbox and gone when
the shell exits; the environment itself never changes. Without a terminal,
bash reads commands from stdin.`
}

func (*envShellCmd) flags(fs *flag.FlagSet) {}

func (*envShellCmd) run(ctx context.Context, e *Env, args []string) error {
	if len(args) != 1 {
		return usagef("want one environment id or name")
	}
	env, err := resolveEnv(e, args[0])
	if err != nil {
		return err
	}
	s, done, err := openEnvSandbox(ctx, e, env)
	if err != nil {
		return err
	}
	defer done()
	if in, ok := e.Stdin.(*os.File); ok && term.IsTerminal(int(in.Fd())) {
		return (&sandboxShellCmd{}).interactive(ctx, s, in, e.Stdout)
	}
	r, err := s.Exec(ctx, sandbox.Cmd{Args: []string{"/bin/bash"}, Stdin: e.Stdin, Stdout: e.Stdout, Stderr: e.Stderr, Capture: 4096})
	if err != nil {
		return err
	}
	return exitStatus(statusOf(r))
}
