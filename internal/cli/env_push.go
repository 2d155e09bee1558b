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

type envPushCmd struct {
	json    bool
	withLog bool
}

func (*envPushCmd) Name() string     { return "env push" }
func (*envPushCmd) Synopsis() string { return "store an environment in an OCI registry" }
func (*envPushCmd) Usage() string {
	return `ID REF [--json] [--with-build-log]
Stores environment ID (id, unique id prefix or name) in an OCI registry
as REF, REGISTRY/REPOSITORY[:TAG] (registry.example.com/team/envs; no
tag: the environment's id). The artifact is an OCI image manifest whose
config is the environment's env.json and whose layers are its layer's
top-level directories (repo/, venv/), each a compressed tar, with its
baseline and coverage map, and its build log with --with-build-log (a log
may hold what an install printed of this machine). Blobs the registry
already has, such as a layer another environment shares, are not sent
again.

An environment built on a stored base (cwm env build --portable or
--base DIGEST) brings it: the base's image (its manifest, configuration
and layers) is pushed into the same repository by its digest, and the
environment's manifest names it; a registry keeps it once for all the
environments on it, and cwm env pull imports it. An environment built on
the host's system (or a directory) is pushed with a warning: it runs
only on hosts with the same system packages.

Prints the reference with the manifest's digest, which pulls exactly
this artifact: cwm env pull REF@sha256:..., or --env REF@sha256:... on
any command. Credentials come from the Docker config ($DOCKER_CONFIG or
~/.docker/config.json); registries on loopback addresses and those in
$CWM_INSECURE_REGISTRIES (host:port,...) are spoken to over plain HTTP.
See docs/scale.md.`
}

func (c *envPushCmd) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print the result as JSON")
	fs.BoolVar(&c.withLog, "with-build-log", false, "ship the build log too (it stays here otherwise)")
}

func (c *envPushCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 2 {
		return command.Usagef("want an environment and a registry reference")
	}
	en, err := env.NewStore(e.Home).Resolve(args[0])
	if err != nil {
		return err
	}
	res, err := envoci.Push(ctx, en, args[1], envoci.Options{Home: e.Home, WithBuildLog: c.withLog})
	if err != nil {
		return err
	}
	sayPortable(e, en, res.Base, "pushed by digest into the same repository")
	if c.json {
		return writeJSON(e.Stdout, res)
	}
	fmt.Fprintln(e.Stdout, res.Ref)
	fmt.Fprintf(e.Stderr, "pushed %s: %d blobs, %d uploaded (%s), %d already there, in %.1fs\n",
		res.EnvID, res.Blobs, res.Uploaded, humanBytes(res.Bytes), res.Blobs-res.Uploaded, res.Seconds)
	return nil
}

// sayPortable tells, on stderr, what an environment shipped took of its
// base: the stored base it brings, or a warning that it does not travel.
func sayPortable(e *command.Env, en *env.Env, shipped, how string) {
	if shipped == "" {
		fmt.Fprintf(e.Stderr, "warning: %s is not portable (%s): it runs only on hosts with the same system packages (cwm env build --portable builds one that brings its base)\n", en.ID, notPortableBase(en.Base))
		return
	}
	fmt.Fprintf(e.Stderr, "with its base %s (%s)\n", base.ShortDigest(shipped), how)
}
