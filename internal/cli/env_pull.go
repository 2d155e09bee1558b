package cli

import (
	"context"
	"flag"
	"fmt"

	"cwm/internal/base"
	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/envoci"
	"cwm/internal/layertar"
)

type envPullCmd struct {
	json        bool
	maxUnpacked command.ByteSize
	grant       grantFlags
}

func (*envPullCmd) Name() string     { return "env pull" }
func (*envPullCmd) Synopsis() string { return "fetch an environment from an OCI registry" }
func (*envPullCmd) Usage() string {
	return `REF [--json] [--max-unpacked SIZE] [--base DIR] [--timeout D] [--memory BYTES] [--disk BYTES] [--pids N]
Puts the environment REF names (REGISTRY/REPOSITORY:TAG or
REGISTRY/REPOSITORY@sha256:..., as cwm env push printed it) into the
store, unless it is there, and prints its id. Only the blobs the blob
cache ($CWM_HOME/blobs) lacks are fetched, each checked against its
digest: pulling an environment again reads its manifest only (nothing for
a reference by digest), and one that shares layers with an environment
pulled before fetches only what is new. A blob that does not match its
digest is refused, and an interrupted pull leaves nothing in the store.

An environment pushed with its base (one built on a stored base) has the
base imported into the base store first, unless it is there, as cwm base
import does (from the same repository, by its digest; layers the blob
cache has are not fetched again), and runs on it: no --base needed.

A layer is unpacked under the rules of docs/scale.md ("What a layer may
hold"): nothing outside its directory or through a symbolic link, no
devices, FIFOs, sparse files or whiteouts, hard links only to its own
files; and no more than --max-unpacked bytes (default 32G) in all, nor
more than the destination's free space, nor more than 1,048,576 entries.
A layer that breaks a rule is refused, naming the layer and the entry.

Every command that takes an environment also takes REF and pulls it on
first use. Credentials and plain-HTTP registries: see cwm env push.
The store records where the environment came from (the reference and the
manifest's digest; cwm env show prints it).` + grantHelp
}

func (c *envPullCmd) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print the result as JSON")
	c.maxUnpacked = layertar.DefaultMaxBytes
	fs.Var(&c.maxUnpacked, "max-unpacked", "the `SIZE` the environment may take unpacked (suffixes K, M, G, T); a layer past it is refused")
	c.grant.register(fs)
}

func (c *envPullCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 1 {
		return command.Usagef("want one registry reference")
	}
	g, err := c.grant.grant()
	if err != nil {
		return err
	}
	res, err := envoci.Pull(ctx, env.NewStore(e.Home), args[0], envoci.Options{Home: e.Home, MaxUnpacked: int64(c.maxUnpacked), Grant: g})
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(e.Stdout, res)
	}
	fmt.Fprintln(e.Stdout, res.EnvID)
	if res.Present {
		fmt.Fprintf(e.Stderr, "%s is in the store (%s)\n", res.EnvID, shortDigest(res.Digest))
	} else {
		fmt.Fprintf(e.Stderr, "pulled %s: %d blobs, %d fetched (%s), %d from the cache, in %.1fs\n",
			res.EnvID, res.Blobs, res.Fetched, humanBytes(res.Bytes), res.Blobs-res.Fetched, res.Seconds)
		if b := res.Base; b != nil && b.Present {
			fmt.Fprintf(e.Stderr, "its base %s is in the base store\n", base.ShortDigest(b.Digest))
		} else if b != nil {
			fmt.Fprintf(e.Stderr, "imported its base %s: %d layers fetched (%s)\n", base.ShortDigest(b.Digest), b.Fetched, humanBytes(b.Bytes))
		}
	}
	return nil
}

// shortDigest shows a digest as sha256: and 12 digits.
func shortDigest(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}
