// Command cwm builds the data a code world model learns from: executable
// environments, execution traces, verified tasks, agent trajectories and
// their rewards. See README.md and docs/.
//
// 'cwm sandbox run' and 'cwm sandbox shell' never reach main: they run from
// a package initialiser (see cwm/internal/cli/sandboxcmd).
package main

import (
	"cwm/internal/cli"
	"cwm/internal/command"
)

func main() {
	command.Main(cli.Program)
}
