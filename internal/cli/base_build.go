package cli

import (
	"context"
	"flag"
	"strings"

	"cwm/internal/base"
	"cwm/internal/basebuild"
	"cwm/internal/command"
)

type baseBuildCmd struct {
	debian, packages, mirror string
}

func (*baseBuildCmd) Name() string     { return "base build" }
func (*baseBuildCmd) Synopsis() string { return "build a base from the Debian archive" }
func (*baseBuildCmd) Usage() string {
	return `--debian SUITE [--packages P,...] [--mirror URL]
Builds a base from the Debian archive and prints its digest: a minimal
system with python3, python3-venv, python3-pip, git and ca-certificates,
and the --packages given. bookworm gives Python 3.11, bullseye 3.9, trixie
3.13.

The tree is made by mmdebstrap in a user namespace (no root needed), or,
where mmdebstrap is missing, by debootstrap as root. The mirror is the one
the host's apt sources name (/etc/apt/sources.list, sources.list.d/*.list
and *.sources) unless --mirror is given. The tree becomes one layer (a tar
made deterministically) under an OCI manifest cwm writes, whose digest is
the base's: a Debian base is pushed like an imported image.`
}

func (c *baseBuildCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.debian, "debian", "", "the Debian `SUITE` (bookworm, bullseye, trixie, ...)")
	fs.StringVar(&c.packages, "packages", "", "more Debian packages to install, comma-separated")
	fs.StringVar(&c.mirror, "mirror", "", "the Debian archive's `URL` (default: the host's apt sources')")
}

func (c *baseBuildCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("base build takes no arguments")
	}
	if c.debian == "" {
		return command.Usagef("base build needs --debian SUITE")
	}
	d := basebuild.Debian{Suite: c.debian, Mirror: c.mirror}
	for _, p := range strings.Split(c.packages, ",") {
		if p = strings.TrimSpace(p); p != "" {
			d.Packages = append(d.Packages, p)
		}
	}
	o, done, err := baseOptions(e)
	if err != nil {
		return err
	}
	defer done()
	b, err := basebuild.BuildDebian(ctx, base.NewStore(e.Home), d, o)
	if err != nil {
		return err
	}
	printBase(e, b)
	return nil
}
