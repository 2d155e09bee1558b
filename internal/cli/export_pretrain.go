package cli

import (
	"context"
	"flag"

	"cwm/internal/command"
	"cwm/internal/export"
)

type exportPretrainCmd struct{ exportFlags }

func (*exportPretrainCmd) Name() string { return "export pretrain" }
func (*exportPretrainCmd) Synopsis() string {
	return "export traces as CWM's token text"
}
func (*exportPretrainCmd) Usage() string {
	return `--in TRACES.jsonl --out FILE [flags]
Writes each complete trace of cwm trace func or cwm trace repo as one row
whose "text" is CWM's trace text, <|begin_of_text|><|trace_context_start|>
the context, then each frame ending in <|frame_sep|>, then
<|end_of_text|>: what a trainer with CWM's tokenizer reads as it is.
Traces that did not complete (timeout, too_long, error, memory) are
skipped and counted. A line's repository is its "repo" field, else its
input file's name without the extension.
` + exportFooter
}

func (c *exportPretrainCmd) Flags(fs *flag.FlagSet) { c.bind(fs, "traces") }

func (c *exportPretrainCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	return c.run(ctx, e, export.Pretrain, args, func(*export.Options) error { return nil })
}
