package cli

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"cwm/internal/base"
	"cwm/internal/command"
)

type baseLsCmd struct{ json bool }

func (*baseLsCmd) Name() string     { return "base ls" }
func (*baseLsCmd) Synopsis() string { return "list the stored bases" }
func (*baseLsCmd) Usage() string {
	return `[--json]
Lists the bases in $CWM_HOME/bases, newest first: digest (12 digits), kind
(registry, layout, archive, debian, dir), where it came from, its Python,
its unpacked size, when it was stored, and how many environments of the
store use it. Imports under way and what interrupted ones left are never
listed (base gc removes the latter). --json prints the base.json of each,
with "dir" and "used_by" added.`
}

func (c *baseLsCmd) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print the bases as a JSON array")
}

// listedBase is a base as base ls --json prints it.
type listedBase struct {
	*base.Base
	Dir    string   `json:"dir"`
	UsedBy []string `json:"used_by"`
}

func (c *baseLsCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("base ls takes no arguments")
	}
	bases, err := base.NewStore(e.Home).List()
	if err != nil {
		return err
	}
	users, err := baseUsers(e.Home, bases)
	if err != nil {
		return err
	}
	if c.json {
		out := []listedBase{}
		for _, b := range bases {
			out = append(out, listedBase{Base: b, Dir: b.Dir(), UsedBy: append([]string{}, users[b.Digest]...)})
		}
		return writeJSON(e.Stdout, out)
	}
	if len(bases) == 0 {
		fmt.Fprintln(e.Stderr, "no bases (cwm base build --debian bookworm, or cwm base import REF)")
		return nil
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DIGEST\tKIND\tSOURCE\tPYTHON\tSIZE\tCREATED\tENVS")
	for _, b := range bases {
		py := "none"
		if b.Py != nil {
			py = b.Py.Version
		}
		src := b.Source.Ref
		if b.Source.Kind == base.KindDebian {
			src = b.Describe()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", b.Short(), b.Source.Kind, src, py, humanBytes(b.Bytes),
			b.CreatedAt.Local().Format("2006-01-02 15:04"), len(users[b.Digest]))
	}
	return tw.Flush()
}
