package cli

import (
	"context"
	"flag"
	"fmt"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/envoci"
)

type envGCCmd struct{}

func (*envGCCmd) Name() string     { return "env gc" }
func (*envGCCmd) Synopsis() string { return "remove unusable environments and build leftovers" }
func (*envGCCmd) Usage() string {
	return `
Removes unusable environments, directories without a valid manifest, the
leftovers of interrupted builds (never a build that is still running) and
half-removed environments. Usable environments are kept. Then the blob
cache ($CWM_HOME/blobs) drops what no stored environment came from and no
stored base keeps (cwm base gc clears the bases' leftovers), and the
wheel cache ($CWM_HOME/cache/wheels, the files --locked rebuilds
install from, and their unpacked trees in cache/unpacked) what no stored
environment's lock names, and the editable cache (cache/editable, the
projects' editable installs a rebuild links) what no stored environment's
project has.`
}

func (*envGCCmd) Flags(fs *flag.FlagSet) {}

func (*envGCCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("env gc takes no arguments")
	}
	st := env.NewStore(e.Home)
	removed, err := st.GC()
	for _, r := range removed {
		fmt.Fprintf(e.Stdout, "removed %s\n", r)
	}
	if err != nil {
		return err
	}
	freed, err := envoci.Prune(e.Home, st)
	if err != nil {
		return fmt.Errorf("prune the blob cache: %w", err)
	}
	if freed > 0 {
		fmt.Fprintf(e.Stdout, "removed %s of cached blobs\n", humanBytes(freed))
	}
	kept, err := st.List()
	if err != nil {
		return err
	}
	wheels, err := envbuild.PruneWheelCache(e.Home, kept)
	if err != nil {
		return err
	}
	if wheels > 0 {
		fmt.Fprintf(e.Stdout, "removed %s of cached wheels\n", humanBytes(wheels))
	}
	if len(removed) == 0 && freed == 0 && wheels == 0 {
		fmt.Fprintln(e.Stderr, "nothing to remove")
	}
	return nil
}
