// Command cwm builds the data a code world model learns from: executable
// environments, execution traces, verified tasks, agent trajectories and
// their rewards. See README.md and docs/.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"cwm/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
