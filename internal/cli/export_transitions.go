package cli

import (
	"context"
	"flag"

	"cwm/internal/command"
	"cwm/internal/export"
)

type exportTransitionsCmd struct{ exportFlags }

func (*exportTransitionsCmd) Name() string { return "export transitions" }
func (*exportTransitionsCmd) Synopsis() string {
	return "export trajectories' real command runs and grades as world-model and reward-model rows"
}
func (*exportTransitionsCmd) Usage() string {
	return `--in TRAJ.jsonl --out FILE [flags]
Writes one transition row per bash step whose record holds a world-model
context and a real run (cwm forage or cwm serve with --record-context,
or the sim backend's corrections and fallbacks): messages are exactly
what the sim backend sends a world model for the command, completion
the real run as the reply it accepts ({"stdout","stderr","exit_code"}).
A trajectory graded for real also gives one reward row: messages are
what --sim-reward sends, completion {"resolved","reward"}. A model
trained on messages -> completion goes behind --sim-model (or
--sim-reward) as it is. See docs/sim.md.
` + exportFooter
}

func (c *exportTransitionsCmd) Flags(fs *flag.FlagSet) { c.bind(fs, "trajectories") }

func (c *exportTransitionsCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	return c.run(ctx, e, export.Transitions, args, func(*export.Options) error { return nil })
}
