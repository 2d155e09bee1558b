package cli

import (
	"context"
	"flag"

	"cwm/internal/cli/sandboxcmd"
	"cwm/internal/command"
)

type envShellCmd struct{}

func (*envShellCmd) Name() string     { return "env shell" }
func (*envShellCmd) Synopsis() string { return "open bash in a sandbox on an environment" }
func (*envShellCmd) Usage() string {
	return `ID
Opens bash in /repo of a fresh sandbox on the environment, with its virtual
environment first on PATH. Changes are private to the sandbox and gone when
the shell exits; the environment itself never changes. Without a terminal,
bash reads commands from stdin.`
}

func (*envShellCmd) Flags(fs *flag.FlagSet) {}

func (*envShellCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 1 {
		return command.Usagef("want one environment id or name")
	}
	env, err := resolveEnv(ctx, e, args[0])
	if err != nil {
		return err
	}
	s, done, err := openEnvSandbox(ctx, e, env)
	if err != nil {
		return err
	}
	defer done()
	return sandboxcmd.Shell(ctx, s, e)
}
