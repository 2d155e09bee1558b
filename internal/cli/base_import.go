package cli

import (
	"context"
	"flag"

	"cwm/internal/base"
	"cwm/internal/basebuild"
	"cwm/internal/command"
)

type baseImportCmd struct {
	platform    string
	maxUnpacked command.ByteSize
}

func (*baseImportCmd) Name() string { return "base import" }
func (*baseImportCmd) Synopsis() string {
	return "store an OCI image or a root filesystem directory as a base"
}
func (*baseImportCmd) Usage() string {
	return `[--platform OS/ARCH] [--max-unpacked BYTES] REF
Stores a base, the root filesystem sandboxes start on, in $CWM_HOME/bases
under its digest, and prints the digest. REF is one of:

  a directory holding an OCI layout (it has an oci-layout file);
  a docker save archive (a file);
  a plain root filesystem directory (packed into one layer);
  a registry reference (registry.example.com/team/image:tag or @sha256:...),
  pulled without Docker; credentials as env pull's (docs/scale.md).

From an index, the image of --platform is taken. Layers are unpacked lowest
first with whiteouts and opaque directories honoured, each checked against
its digest: a corrupted layer is refused, by its number and digest, and
nothing is stored. The image's Env (PATH), WorkingDir and User are kept;
the Python in it is found by running python3 in a sandbox on it. A base
without Python is stored, and a build on it fails saying so.

Importing a base the store has does nothing. docs/bases.md has the rest.`
}

func (c *baseImportCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.platform, "platform", "linux/amd64", "the `OS/ARCH` to take from an index")
	fs.Var(&c.maxUnpacked, "max-unpacked", "ceiling on the unpacked root filesystem in `BYTES` (default 32G)")
}

func (c *baseImportCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 1 {
		return command.Usagef("base import takes one REF")
	}
	o, done, err := baseOptions(e)
	if err != nil {
		return err
	}
	defer done()
	o.Platform, o.MaxUnpacked = c.platform, int64(c.maxUnpacked)
	b, err := basebuild.Import(ctx, base.NewStore(e.Home), args[0], o)
	if err != nil {
		return err
	}
	printBase(e, b)
	return nil
}
