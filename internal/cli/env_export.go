package cli

import (
	"context"
	"flag"
	"fmt"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/envoci"
)

type envExportCmd struct {
	json    bool
	withLog bool
}

func (*envExportCmd) Name() string     { return "env export" }
func (*envExportCmd) Synopsis() string { return "write an environment to one file" }
func (*envExportCmd) Usage() string {
	return `ID FILE [--json] [--with-build-log]
Writes environment ID to FILE: the artifact cwm env push would store, as
an OCI image layout in a tar (what skopeo and others call oci-archive),
for machines that share a file system rather than a registry. FILE
appears complete or not at all. cwm env import FILE puts it into a store;
every command that takes an environment also takes FILE and imports it
on first use. The build log stays here unless --with-build-log.`
}

func (c *envExportCmd) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print the result as JSON")
	fs.BoolVar(&c.withLog, "with-build-log", false, "ship the build log too (it stays here otherwise)")
}

func (c *envExportCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 2 {
		return command.Usagef("want an environment and a file")
	}
	en, err := env.NewStore(e.Home).Resolve(args[0])
	if err != nil {
		return err
	}
	res, err := envoci.ExportWith(en, args[1], envoci.Options{Home: e.Home, WithBuildLog: c.withLog})
	if err != nil {
		return err
	}
	sayPortable(e, en, res.Base, "written into the file")
	if c.json {
		return writeJSON(e.Stdout, res)
	}
	fmt.Fprintf(e.Stderr, "exported %s to %s: %d blobs, %s (%s)\n", res.EnvID, args[1], res.Blobs, humanBytes(res.Bytes), shortDigest(res.Digest))
	return nil
}
