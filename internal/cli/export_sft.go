package cli

import (
	"context"
	"flag"

	"cwm/internal/command"
	"cwm/internal/export"
)

type exportSFTCmd struct {
	exportFlags
	mask string
}

func (*exportSFTCmd) Name() string { return "export sft" }
func (*exportSFTCmd) Synopsis() string {
	return "export trajectories as chats with a loss weight per message"
}
func (*exportSFTCmd) Usage() string {
	return `--in TRAJ.jsonl --out FILE [flags]
Writes each trajectory of cwm forage as one row: its messages in OpenAI's
chat format, each with "weight" 1 (the trainer computes the loss on it)
or 0 (context only), the per-message flag axolotl's chat_template
datasets read with message_field_training: weight.

--mask decides the weights of the environment's turns (tool results,
and user messages after the agent's first turn): none trains on every
message; random masks each observation with probability 1/2, decided by
--seed, as CWM's mid-training did ("trained on both agent and
environment turns, with the loss masked on a random 50% of
observations"); all trains on the assistant's messages only.
` + exportFooter
}

func (c *exportSFTCmd) Flags(fs *flag.FlagSet) {
	c.bind(fs, "trajectories")
	fs.StringVar(&c.mask, "mask", "none", "observation masking: `none`, all or random")
}

func (c *exportSFTCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	return c.run(ctx, e, export.SFT, args, func(o *export.Options) error {
		m, err := export.ParseMask(c.mask)
		if err != nil {
			return command.Usagef("--mask: %v", err)
		}
		o.Mask = m
		return nil
	})
}
