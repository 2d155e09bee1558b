package cli

import (
	"context"
	"flag"
	"fmt"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/envoci"
	"cwm/internal/layertar"
)

type envImportCmd struct {
	json        bool
	maxUnpacked command.ByteSize
	grant       grantFlags
}

func (*envImportCmd) Name() string     { return "env import" }
func (*envImportCmd) Synopsis() string { return "put an exported environment into the store" }
func (*envImportCmd) Usage() string {
	return `FILE [--json] [--max-unpacked SIZE] [--base DIR] [--timeout D] [--memory BYTES] [--disk BYTES] [--pids N]
Puts the environments of FILE (written by cwm env export) into the store
and prints their ids. Every blob is checked against its digest; a file
cut short or damaged is refused and nothing is added. An environment the
store already has is not read again. The store records where each came
from (the file, its sha256 and the manifest's digest; cwm env show prints
it).

Layers are unpacked under the rules cwm env pull describes, within
--max-unpacked bytes (default 32G) per environment.` + grantHelp
}

func (c *envImportCmd) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print the result as JSON")
	c.maxUnpacked = layertar.DefaultMaxBytes
	fs.Var(&c.maxUnpacked, "max-unpacked", "the `SIZE` the environment may take unpacked (suffixes K, M, G, T); a layer past it is refused")
	c.grant.register(fs)
}

func (c *envImportCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 1 {
		return command.Usagef("want one file")
	}
	g, err := c.grant.grant()
	if err != nil {
		return err
	}
	res, err := envoci.Import(env.NewStore(e.Home), args[0], envoci.Options{Home: e.Home, MaxUnpacked: int64(c.maxUnpacked), Grant: g})
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
