// Package cli implements cwm's command line: one file per subcommand, each a
// struct whose fields hold its flags, run by the dispatcher of
// cwm/internal/command. The sandbox commands live in
// cwm/internal/cli/sandboxcmd, which also runs them on a fast path before
// this package initialises.
package cli

import (
	"context"
	"io"
	"slices"

	"cwm/internal/cli/sandboxcmd"
	"cwm/internal/command"
)

// Program is cwm's command line.
var Program = &command.Program{
	Help:   mainHelp,
	Footer: mainFooter,
	Commands: slices.Concat([]func() command.Command{
		func() command.Command { return &versionCmd{} },
	}, sandboxcmd.Commands, []func() command.Command{
		func() command.Command { return &envBuildCmd{} },
		func() command.Command { return &envLsCmd{} },
		func() command.Command { return &envShowCmd{} },
		func() command.Command { return &envRmCmd{} },
		func() command.Command { return &envGCCmd{} },
		func() command.Command { return &envShellCmd{} },
		func() command.Command { return &envTestCmd{} },
		func() command.Command { return &envCoverageCmd{} },
		func() command.Command { return &envPushCmd{} },
		func() command.Command { return &envPullCmd{} },
		func() command.Command { return &envExportCmd{} },
		func() command.Command { return &envImportCmd{} },
		func() command.Command { return &baseImportCmd{} },
		func() command.Command { return &baseBuildCmd{} },
		func() command.Command { return &baseLsCmd{} },
		func() command.Command { return &baseRmCmd{} },
		func() command.Command { return &baseGCCmd{} },
		func() command.Command { return &envLockCmd{} },
		func() command.Command { return &tasksMutateCmd{} },
		func() command.Command { return &tasksCommitsCmd{} },
		func() command.Command { return &tasksValidateCmd{} },
		func() command.Command { return &tasksImportCmd{} },
		func() command.Command { return &tasksExportCmd{} },
		func() command.Command { return &gradeCmd{} },
		func() command.Command { return &rewardCmd{} },
		func() command.Command { return &dedupCmd{} },
		func() command.Command { return &exportSFTCmd{} },
		func() command.Command { return &exportPretrainCmd{} },
		func() command.Command { return &exportTripletsCmd{} },
		func() command.Command { return &exportTransitionsCmd{} },
		func() command.Command { return &traceFuncCmd{} },
		func() command.Command { return &traceRepoCmd{} },
		func() command.Command { return &traceProgCmd{} },
		func() command.Command { return &traceTestsCmd{} },
		func() command.Command { return &traceCheckCmd{} },
		func() command.Command { return &traceShowCmd{} },
		func() command.Command { return &traceNarrateCmd{} },
		func() command.Command { return &forageCmd{} },
		func() command.Command { return &mergeCmd{} },
		func() command.Command { return &serveCmd{} },
		func() command.Command { return &evalCruxCmd{} },
		func() command.Command { return &evalHaltCmd{} },
		func() command.Command { return &evalFidelityCmd{} },
		func() command.Command { return &evalObserveCmd{} },
		func() command.Command { return &evalSimCmd{} },
		func() command.Command { return &reportCmd{} },
		func() command.Command { return &selectCmd{} },
		func() command.Command { return &searchCmd{} },
	}),
}

// Run executes cwm with the given arguments (without the program name) and
// returns the process exit code (see command.Program.Run).
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return Program.Run(ctx, args, stdin, stdout, stderr)
}

const mainHelp = `cwm builds what a code world model learns from and acts in: executable
repository environments, execution traces in CWM's format, verified bug-fix
tasks, agent trajectories and their rewards. Untrusted code runs only inside
cwm's sandbox (Linux namespaces, overlayfs, cgroups).

Usage:
  cwm COMMAND [flags] [arguments]

Commands:
`

const mainFooter = `
Run 'cwm help COMMAND' (or 'cwm COMMAND --help') for a command's flags.
Environment: CWM_HOME (default ~/.cache/cwm) holds environments and run state;
CWM_DEBUG=1 logs debug detail to stderr.
`
