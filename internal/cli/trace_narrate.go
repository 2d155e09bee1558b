package cli

import (
	"context"
	"flag"
	"fmt"
	"runtime"

	"cwm/internal/command"
	"cwm/internal/narrate"
)

type traceNarrateCmd struct {
	endpointFlags
	evalOutput
	in         string
	contextTok int
	max        int
	runWorkers int
}

func (*traceNarrateCmd) Name() string { return "trace narrate" }
func (*traceNarrateCmd) Synopsis() string {
	return "rewrite traces as natural-language reasoning, keeping the narrations whose answer is right"
}
func (*traceNarrateCmd) Usage() string {
	return `--in TRACES.jsonl --model NAME --base-url URL --out NARRATIONS.jsonl [flags]
Asks the model to rewrite each trace of TRACES.jsonl (the output of
cwm trace func) as step-by-step reasoning in plain English that ends in
the call's result, on a last line
    [ANSWER] CALL == VALUE [/ANSWER]
or, when the call raises,
    [ANSWER] CALL raises EXCEPTION_TYPE [/ANSWER]
(the prompt is cwm's, in docs/traces.md). A narration is kept only when
its answer agrees with the traced call: a value by CruxEval's check
(the code, then assert CALL == VALUE, run in the sandbox), an exception
by its type's name.

A trace whose prompt is longer than --context tokens (counted as bytes/4)
is not sent; nor is a trace that is not complete or not of a call. Each
trace is one line of --out, kept or dropped with its reason (consistent,
no_answer, wrong_answer, call_echoed, check_timeout, wrong_exception,
missed_exception, unexpected_exception, too_long, incomplete, not_a_call);
the file is appended to and resumed. --max N stops once the shard has N
lines. Prints the kept and dropped counts by reason (--json: as JSON).
See docs/traces.md.

Examples:
  cwm trace narrate --in traces.jsonl --model cwm --base-url http://localhost:8000/v1 --out narrations.jsonl
  cwm trace narrate --in traces.jsonl --model cwm --base-url http://localhost:8000/v1 --out n.jsonl --shard 0/4 --max 1000`
}

func (c *traceNarrateCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.in, "in", "", "traces `file` (JSONL, cwm trace func's output)")
	fs.IntVar(&c.contextTok, "context", narrate.DefaultContext, "the model's context in `tokens`: a longer prompt is skipped (too_long)")
	fs.IntVar(&c.max, "max", 0, "stop once the shard has `N` lines in --out (0: no limit)")
	fs.IntVar(&c.runWorkers, "run-workers", runtime.NumCPU(), "sandboxed Python servers checking answers")
	c.evalOutput.register(fs, "trace", "narrate the traces (by id)")
	c.endpointFlags.register(fs, endpointUse{sampling: true, per: "narration", maxTokens: "8192", topP: true, concurrency: true})
}

func (c *traceNarrateCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	switch {
	case len(args) > 0:
		return command.Usagef("unexpected arguments %q", args)
	case c.in == "":
		return command.Usagef("--in is required")
	case c.contextTok < 1 || c.max < 0 || c.runWorkers < 1:
		return command.Usagef("--context and --run-workers must be at least 1, --max not negative")
	}
	if err := checkRun(&c.endpointFlags, &c.evalOutput); err != nil {
		return err
	}
	traces, err := narrate.ReadTraces(c.in)
	if err != nil {
		return err
	}
	run, err := startSandboxedRun(ctx, e, &c.endpointFlags, &c.evalOutput, 8192, c.runWorkers, 0)
	if err != nil {
		return err
	}
	defer run.stop()
	sum, err := narrate.Run(ctx, traces, narrate.Options{In: c.in, Out: c.out, Client: run.client, Scorer: run.runner,
		Context: c.contextTok, Max: c.max, Shard: run.part, Concurrency: c.concurrency, Progress: progressTo(e, c.quiet),
		OnModelError: func(id string, err error) { fmt.Fprintf(e.Stderr, "cwm trace narrate: %s: %v\n", id, err) }})
	if err != nil {
		return finishEval(ctx, e, err, c.json, nil, 0)
	}
	return finishEval(ctx, e, nil, c.json, sum, sum.ModelErrors)
}
