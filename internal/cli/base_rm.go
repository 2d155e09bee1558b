package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"cwm/internal/base"
	"cwm/internal/command"
	"cwm/internal/errkind"
)

type baseRmCmd struct{ force bool }

func (*baseRmCmd) Name() string     { return "base rm" }
func (*baseRmCmd) Synopsis() string { return "remove stored bases" }
func (*baseRmCmd) Usage() string {
	return `[--force] DIGEST|PREFIX...
Removes each base (by digest, or a prefix of at least 4 hex digits only
one base has) from $CWM_HOME/bases. A base an environment of the store
names is kept, saying which, unless --force is given (the environment then
cannot start until the base is imported again). Every argument is resolved
before anything is removed. The blobs stay in the blob cache until env gc
or base gc prunes it.`
}

func (c *baseRmCmd) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.force, "force", false, "remove bases environments still name")
}

func (c *baseRmCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) == 0 {
		return command.Usagef("want at least one base digest or prefix")
	}
	st := base.NewStore(e.Home)
	var bases []*base.Base
	seen := map[string]bool{}
	for _, a := range args {
		b, err := st.Resolve(a)
		if err != nil {
			return err
		}
		if !seen[b.Digest] {
			seen[b.Digest] = true
			bases = append(bases, b)
		}
	}
	users, err := baseUsers(e.Home, bases)
	if err != nil {
		return err
	}
	if !c.force {
		for _, b := range bases {
			if u := users[b.Digest]; len(u) > 0 {
				return errkind.Errorf(errkind.Input, "base %s is used by %d environment(s) (%s): remove them first, or give --force", b.Short(), len(u), strings.Join(u, ", "))
			}
		}
	}
	for _, b := range bases {
		if err := st.Remove(b); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "removed %s (%s)\n", b.Short(), b.Describe())
	}
	return nil
}
