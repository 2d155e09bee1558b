package cli

import (
	"context"
	"flag"
	"fmt"

	"cwm/internal/envbuild"
)

type envGCCmd struct{}

func (*envGCCmd) name() string     { return "env gc" }
func (*envGCCmd) synopsis() string { return "remove unusable environments and build leftovers" }
func (*envGCCmd) usage() string {
	return `
Removes unusable environments, directories without a valid manifest, the
leftovers of interrupted builds (never a build that is still running) and
half-removed environments. Usable environments are kept.`
}

func (*envGCCmd) flags(fs *flag.FlagSet) {}

func (*envGCCmd) run(ctx context.Context, e *Env, args []string) error {
	if len(args) > 0 {
		return usagef("env gc takes no arguments")
	}
	removed, err := envbuild.NewStore(e.Home).GC()
	for _, r := range removed {
		fmt.Fprintf(e.Stdout, "removed %s\n", r)
	}
	if err != nil {
		return err
	}
	if len(removed) == 0 {
		fmt.Fprintln(e.Stderr, "nothing to remove")
	}
	return nil
}
