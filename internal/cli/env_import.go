package cli

import (
	"context"
	"flag"
	"fmt"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/envoci"
)

type envImportCmd struct {
	json bool
}

func (*envImportCmd) Name() string     { return "env import" }
func (*envImportCmd) Synopsis() string { return "put an exported environment into the store" }
func (*envImportCmd) Usage() string {
	return `FILE [--json]
Puts the environments of FILE (written by cwm env export) into the store
and prints their ids. Every blob is checked against its digest; a file
cut short or damaged is refused and nothing is added. An environment the
store already has is not read again.`
}

func (c *envImportCmd) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print the result as JSON")
}

func (c *envImportCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 1 {
		return command.Usagef("want one file")
	}
	res, err := envoci.Import(env.NewStore(e.Home), args[0], e.Home)
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(e.Stdout, res)
	}
	for _, id := range res.IDs {
		fmt.Fprintln(e.Stdout, id)
	}
	fmt.Fprintf(e.Stderr, "imported %d environments from %s (%d were in the store) in %.1fs\n", len(res.IDs)-res.Present, args[0], res.Present, res.Seconds)
	return nil
}
