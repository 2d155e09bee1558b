package cli

import (
	"context"
	"flag"
	"fmt"

	"cwm/internal/command"
	"cwm/internal/eval"
)

type evalFidelityCmd struct {
	endpointFlags
	evalOutput
	traces string
	next   int
	noFull bool
	limit  int
}

func (*evalFidelityCmd) Name() string { return "eval fidelity" }
func (*evalFidelityCmd) Synopsis() string {
	return "score a model's predicted traces against cwm's (format, per-step state and action, output, next frame)"
}
func (*evalFidelityCmd) Usage() string {
	return `--traces TRACES.jsonl --model NAME --base-url URL --out OUT.jsonl [flags]
For each complete trace of TRACES.jsonl (the output of cwm trace func or
cwm trace repo), asks the model on /v1/completions for the whole trace from
CWM's trace prompt (<|begin_of_text|><|trace_context_start|>CONTEXT
<|frame_sep|>) and scores it against the truth: whether it parses strictly
(format compliance), per-step exact match of the state (event, locals,
value), of the action (the source line) and of both, by position and after
aligning the frames by their actions (a longest common subsequence, so
that a dropped or inserted frame costs one step, not every later one), the
output, and the aligned accuracy by tenth of the trace, by step and by
value kind (int, float, bool, none, str, container, other).

With --next K (default 8), also K teacher-forced steps per trace: the true
prefix given, the model predicts one frame (stop at <|frame_sep|>), scored
as cwm serve's trace episodes score it. --no-full skips whole traces.

Each prediction is one line of --out (appended to, resumed). Prints the
summary (--json: as JSON). See docs/eval.md.

Examples:
  cwm trace func --in cruxeval.jsonl --out traces.jsonl
  cwm eval fidelity --traces traces.jsonl --model cwm --base-url http://localhost:8000/v1 --out fidelity.jsonl`
}

func (c *evalFidelityCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.traces, "traces", "", "traces `file` (cwm trace func or trace repo output)")
	fs.IntVar(&c.next, "next", 8, "teacher-forced next-frame steps per trace (0: none)")
	fs.BoolVar(&c.noFull, "no-full", false, "do not ask for whole traces")
	fs.IntVar(&c.limit, "limit", 0, "only the first `N` traces (0: all)")
	c.evalOutput.register(fs, "prediction", "run the predictions")
	c.endpointFlags.register(fs, evalEndpoint("16384 for a whole trace; 1024 for one frame"))
}

func (c *evalFidelityCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	if c.traces == "" || c.out == "" {
		return command.Usagef("--traces and --out are required")
	}
	if err := c.endpointFlags.check(); err != nil {
		return err
	}
	if c.next < 0 || c.limit < 0 || (c.noFull && c.next == 0) {
		return command.Usagef("--next and --limit must not be negative, and --no-full needs --next")
	}
	part, err := c.part()
	if err != nil {
		return err
	}
	recs, skipped, err := eval.LoadTraces(c.traces)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return fmt.Errorf("%s: no complete traces (%d skipped)", c.traces, skipped)
	}
	if skipped > 0 && !c.quiet {
		fmt.Fprintf(e.Stderr, "cwm eval fidelity: skipped %d incomplete traces of %s\n", skipped, c.traces)
	}
	if c.limit > 0 && c.limit < len(recs) {
		recs = recs[:c.limit]
	}
	maxTokens := 16384
	if c.noFull {
		maxTokens = 1024
	}
	client, err := c.client(maxTokens)
	if err != nil {
		return err
	}
	opts := eval.FidelityOptions{Traces: recs, Full: !c.noFull, Next: c.next, Client: client, Out: c.out, Shard: part, Input: c.traces,
		Concurrency:  c.concurrency,
		OnModelError: func(key string, err error) { fmt.Fprintf(e.Stderr, "cwm eval fidelity: %s: %v\n", key, err) }}
	opts.Progress = progressTo(e, c.quiet)
	sum, err := eval.RunFidelity(ctx, opts)
	if err != nil {
		return finishEval(ctx, e, err, c.json, nil, 0)
	}
	return finishEval(ctx, e, nil, c.json, sum, sum.ModelErrors)
}
