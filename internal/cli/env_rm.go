package cli

import (
	"context"
	"flag"
	"fmt"

	"cwm/internal/command"
	"cwm/internal/env"
)

type envRmCmd struct{}

func (*envRmCmd) Name() string     { return "env rm" }
func (*envRmCmd) Synopsis() string { return "remove environments" }
func (*envRmCmd) Usage() string {
	return `ID...
Removes each environment (by id, unique id prefix or name) with its layer,
manifest, coverage map and build log. Every argument is resolved before
anything is removed, so a typo removes nothing.`
}

func (*envRmCmd) Flags(fs *flag.FlagSet) {}

func (*envRmCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) == 0 {
		return command.Usagef("want at least one environment id or name")
	}
	store := env.NewStore(e.Home)
	var envs []*env.Env
	seen := map[string]bool{}
	for _, a := range args {
		en, err := store.Resolve(a)
		if err != nil {
			return err
		}
		if !seen[en.ID] {
			seen[en.ID] = true
			envs = append(envs, en)
		}
	}
	for _, en := range envs {
		if err := store.Remove(en); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "removed %s (%s)\n", en.ID, en.Name)
	}
	return nil
}
