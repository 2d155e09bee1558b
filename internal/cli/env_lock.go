package cli

import (
	"context"
	"flag"
	"fmt"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/errkind"
)

type envLockCmd struct{}

func (*envLockCmd) Name() string     { return "env lock" }
func (*envLockCmd) Synopsis() string { return "print an environment's lock as a requirements file" }
func (*envLockCmd) Usage() string {
	return `ID
Prints the set of packages an online or --wheelhouse build installed, as
a requirements file with hashes (name==version --hash=sha256:HEX, sorted
by name), which plain pip installs with --require-hashes and cwm env
build --locked FILE reinstalls. The project itself and other local
paths are comments pip skips and --locked reads back
(# name==version local file:///repo). An offline build has no lock.`
}

func (*envLockCmd) Flags(fs *flag.FlagSet) {}

func (*envLockCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 1 {
		return command.Usagef("want one environment")
	}
	en, err := env.NewStore(e.Home).Resolve(args[0])
	if err != nil {
		return err
	}
	if len(en.Lock) == 0 {
		return errkind.Errorf(errkind.Input, "environment %s has no lock (only online and --wheelhouse builds have one)", en.ID)
	}
	_, err = fmt.Fprint(e.Stdout, env.LockRequirements(en.Lock))
	return err
}
