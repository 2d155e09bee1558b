package cli

import (
	"context"
	"flag"
	"fmt"

	"cwm/internal/envbuild"
)

type envRmCmd struct{}

func (*envRmCmd) name() string     { return "env rm" }
func (*envRmCmd) synopsis() string { return "remove environments" }
func (*envRmCmd) usage() string {
	return `ID...
Removes each environment (by id, unique id prefix or name) with its layer,
manifest, coverage map and build log. Every argument is resolved before
anything is removed, so a typo removes nothing.`
}

func (*envRmCmd) flags(fs *flag.FlagSet) {}

func (*envRmCmd) run(ctx context.Context, e *Env, args []string) error {
	if len(args) == 0 {
		return usagef("want at least one environment id or name")
	}
	store := envbuild.NewStore(e.Home)
	var envs []*envbuild.Env
	seen := map[string]bool{}
	for _, a := range args {
		env, err := store.Resolve(a)
		if err != nil {
			return err
		}
		if !seen[env.ID] {
			seen[env.ID] = true
			envs = append(envs, env)
		}
	}
	for _, env := range envs {
		if err := store.Remove(env); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "removed %s (%s)\n", env.ID, env.Name)
	}
	return nil
}
