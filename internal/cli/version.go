package cli

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"

	"cwm/internal/command"
)

// Version is set at build time with -ldflags "-X cwm/internal/cli.Version=...".
var Version = "dev"

type versionCmd struct{}

func (*versionCmd) Name() string        { return "version" }
func (*versionCmd) Synopsis() string    { return "print cwm's version" }
func (*versionCmd) Usage() string       { return "" }
func (*versionCmd) Flags(*flag.FlagSet) {}

func (*versionCmd) Run(_ context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("version takes no arguments")
	}
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " " + s.Value[:12]
			}
		}
	}
	fmt.Fprintf(e.Stdout, "cwm %s%s %s/%s %s\n", Version, rev, runtime.GOOS, runtime.GOARCH, runtime.Version())
	return nil
}
