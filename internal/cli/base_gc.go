package cli

import (
	"context"
	"flag"
	"fmt"

	"cwm/internal/base"
	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/envoci"
)

type baseGCCmd struct{ unused bool }

func (*baseGCCmd) Name() string     { return "base gc" }
func (*baseGCCmd) Synopsis() string { return "remove what interrupted base imports left" }
func (*baseGCCmd) Usage() string {
	return `[--unused]
Removes what interrupted imports and builds left in $CWM_HOME/bases
(never an import still running), half-removed bases and directories
without a valid base.json; with --unused, also every base no environment
of the store names. Then the blob cache drops what no stored environment
or base keeps.`
}

func (c *baseGCCmd) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.unused, "unused", false, "remove the bases no environment names too")
}

func (c *baseGCCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("base gc takes no arguments")
	}
	st := base.NewStore(e.Home)
	removed, err := st.GC()
	for _, r := range removed {
		fmt.Fprintf(e.Stdout, "removed %s\n", r)
	}
	if err != nil {
		return err
	}
	n := len(removed)
	if c.unused {
		bases, err := st.List()
		if err != nil {
			return err
		}
		users, err := baseUsers(e.Home, bases)
		if err != nil {
			return err
		}
		for _, b := range bases {
			if len(users[b.Digest]) > 0 {
				continue
			}
			if err := st.Remove(b); err != nil {
				return err
			}
			n++
			fmt.Fprintf(e.Stdout, "removed %s (%s), used by no environment\n", b.Short(), b.Describe())
		}
	}
	freed, err := envoci.Prune(e.Home, env.NewStore(e.Home))
	if err != nil {
		return fmt.Errorf("prune the blob cache: %w", err)
	}
	if freed > 0 {
		fmt.Fprintf(e.Stdout, "removed %s of cached blobs\n", humanBytes(freed))
	}
	if n == 0 && freed == 0 {
		fmt.Fprintln(e.Stderr, "nothing to remove")
	}
	return nil
}
