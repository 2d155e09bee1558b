package cli

import (
	"flag"
	"os"
	"path/filepath"
	"time"

	"cwm/internal/command"
	"cwm/internal/env"
)

// grantFlags are what the operator grants the environments a pull or an
// import brings in (env.Grant): an artifact's env.json says which base and
// limits its builder used, but on this machine it decides neither.
type grantFlags struct {
	base    string
	timeout time.Duration
	memory  command.ByteSize
	disk    command.ByteSize
	pids    int64
}

const grantHelp = `

The environment's sandboxes start on the stored base it came with (by
digest, imported with it), or on the host's /usr and /etc, or on --base
DIR; never on a directory its env.json names (an environment built on
one is refused without --base). Its limits are clamped at every sandbox
start to the host's defaults (10m, 4 GiB of memory, 2 GiB written, 1024
processes), or to what --timeout, --memory, --disk and --pids grant: an
artifact asking for more gets these. See docs/scale.md.`

func (g *grantFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.base, "base", "", "root filesystem `DIR` its sandboxes start on (default: the host's /usr and /etc; \"host\" says so)")
	fs.DurationVar(&g.timeout, "timeout", 0, "largest wall-clock limit of a command in its sandboxes (default 10m)")
	fs.Var(&g.memory, "memory", "largest memory limit of its sandboxes in `BYTES` (default 4G)")
	fs.Var(&g.disk, "disk", "largest `BYTES` its sandboxes may write (default 2G)")
	fs.Int64Var(&g.pids, "pids", 0, "largest process limit of its sandboxes (default 1024)")
}

// grant checks the flags and returns the grant.
func (g *grantFlags) grant() (env.Grant, error) {
	out := env.Grant{Limits: env.RunLimits{Timeout: g.timeout, Memory: int64(g.memory), Disk: int64(g.disk), Pids: g.pids}}
	if g.timeout < 0 || g.pids < 0 {
		return out, command.Usagef("--timeout and --pids must not be negative")
	}
	switch g.base {
	case "", "host":
		out.Base = g.base
	default:
		abs, err := filepath.Abs(g.base)
		if err != nil {
			return out, command.Usagef("--base %s: %v", g.base, err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return out, command.Usagef("--base %s: no such directory", g.base)
		}
		out.Base = abs
	}
	return out, nil
}
