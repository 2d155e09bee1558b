package cli

import (
	"context"
	"flag"

	"cwm/internal/command"
	"cwm/internal/export"
)

type exportTripletsCmd struct {
	exportFlags
	stateBytes command.ByteSize
}

func (*exportTripletsCmd) Name() string { return "export triplets" }
func (*exportTripletsCmd) Synopsis() string {
	return "export trajectories as (state, action, observation) rows"
}
func (*exportTripletsCmd) Usage() string {
	return `--in TRAJ.jsonl --out FILE [flags]
Writes one row per agent turn the environment answered: the state (the
conversation before the turn), the action (the assistant's message) and
the observation (the messages up to the agent's next turn), with
task_id, sample and turn to join it back to the trajectory and its steps.
The state keeps the prompt (system and task) and then the latest messages
that fit in --state-bytes; the messages left out between them are
counted in state_dropped.
` + exportFooter
}

func (c *exportTripletsCmd) Flags(fs *flag.FlagSet) {
	c.bind(fs, "trajectories")
	c.stateBytes = export.DefaultStateBytes
	fs.Var(&c.stateBytes, "state-bytes", "bound of a state's message text, `SIZE` (0: unbounded)")
}

func (c *exportTripletsCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	return c.run(ctx, e, export.Triplets, args, func(o *export.Options) error {
		if c.stateBytes < 0 {
			return command.Usagef("--state-bytes must be >= 0")
		}
		o.StateBytes = int(c.stateBytes)
		if o.StateBytes == 0 {
			o.StateBytes = -1 // unbounded
		}
		return nil
	})
}
