package cli

import (
	"context"
	"flag"
	"fmt"
	"runtime"

	"cwm/internal/command"
	"cwm/internal/eval"
)

type evalHaltCmd struct {
	endpointFlags
	evalOutput
	thinkFlags
	in, mode, api string
	samples       int
	runWorkers    int
	showPrompt    bool
	id            string
}

func (*evalHaltCmd) Name() string { return "eval halt" }
func (*evalHaltCmd) Synopsis() string {
	return "score a model on predicting whether programs terminate (CWM's HaltEval rule)"
}
func (*evalHaltCmd) Usage() string {
	return `--model NAME --base-url URL --out OUT.jsonl [--mode direct|reasoning] [flags]
Asks the model whether each program terminates and scores the answer by
CWM's rule: "terminates" is right for a terminating program; "diverges" is
right only for a diverging program that, run in a sandbox, is still
running after 5 s (never for a terminating one, however slow).

The programs are cwm's starter set (64, half diverging, embedded; see
docs/eval.md) or --in, a JSONL file of {"id", "code", "label"} with label
terminates or diverges. --mode direct asks for the answer at once
([ANSWER] opened in the prompt); reasoning uses CWM's reasoning system
prompt and <think>. --show-prompt prints one program's prompt and exits.

Each sample is one line of --out; the file is appended to and resumed.
Prints accuracy, precision and recall per class, the confusion matrix and
the constant classifiers' accuracy (--json: as JSON). See docs/eval.md.

Examples:
  cwm eval halt --model cwm --base-url http://localhost:8000/v1 --mode reasoning --out halt.jsonl
  cwm eval halt --show-prompt --id n03_float_equality`
}

func (c *evalHaltCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.in, "in", "", "programs `file` (JSONL of {id, code, label}; default: cwm's starter set)")
	fs.StringVar(&c.mode, "mode", "direct", "direct or reasoning")
	fs.StringVar(&c.api, "api", "completions", "endpoint: completions (raw text) or chat (messages)")
	fs.IntVar(&c.samples, "samples", 1, "answers per program")
	fs.IntVar(&c.runWorkers, "run-workers", runtime.NumCPU(), "sandboxed Python servers confirming non-termination (5 s each)")
	fs.BoolVar(&c.showPrompt, "show-prompt", false, "print the prompt of one program and exit")
	fs.StringVar(&c.id, "id", "", "the program --show-prompt shows (default: the first)")
	c.thinkFlags.register(fs)
	c.evalOutput.register(fs, "sample", "run the (program, sample) pairs")
	c.endpointFlags.register(fs, evalEndpoint("64 direct, 16384 reasoning"))
}

func (c *evalHaltCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	mode, err := eval.ParseMode(c.mode)
	if err != nil || (mode != eval.Direct && mode != eval.Reasoning) {
		return command.Usagef("--mode %q: want direct or reasoning", c.mode)
	}
	api, err := parseAPI(c.api)
	if err != nil {
		return err
	}
	if c.samples < 1 || c.runWorkers < 1 {
		return command.Usagef("--samples and --run-workers must be at least 1")
	}
	programs := eval.HaltPrograms()
	if c.in != "" {
		if programs, err = eval.LoadHaltPrograms(c.in); err != nil {
			return err
		}
	}
	if c.showPrompt {
		p, err := promptOf(programs, c.id, "program", func(p *eval.HaltProgram) string { return p.ID })
		if err != nil {
			return err
		}
		pr, _ := eval.BuildHaltPrompt(mode, api, p, c.think())
		showPrompt(e, fmt.Sprintf("%s, mode %s, api %s, label %s", p.ID, mode, api, p.Label), pr)
		return nil
	}
	if err := checkRun(&c.endpointFlags, &c.evalOutput); err != nil {
		return err
	}
	run, err := startSandboxedRun(ctx, e, &c.endpointFlags, &c.evalOutput,
		map[eval.Mode]int{eval.Direct: 64, eval.Reasoning: 16384}[mode], c.runWorkers, eval.HaltTimeout)
	if err != nil {
		return err
	}
	defer run.stop()
	opts := eval.HaltOptions{Programs: programs, Mode: mode, API: api, Samples: c.samples, Seed: c.seed.ptr(), Think: c.think(),
		Client: run.client, Runner: run.runner, Out: c.out, Shard: run.part, Input: c.in, Concurrency: c.concurrency,
		OnModelError: sampleErrorLogger(e, "cwm eval halt")}
	opts.Progress = progressTo(e, c.quiet)
	sum, err := eval.RunHalt(ctx, opts)
	if err != nil {
		return finishEval(ctx, e, err, c.json, nil, 0)
	}
	return finishEval(ctx, e, nil, c.json, sum, sum.ModelErrors)
}

// sampleErrorLogger prints a sample the model server failed, under the
// command's name: cruxeval's and halt's OnModelError.
func sampleErrorLogger(e *command.Env, cmd string) func(id string, sample int, err error) {
	return func(id string, sample int, err error) {
		fmt.Fprintf(e.Stderr, "%s: %s sample %d: %v\n", cmd, id, sample, err)
	}
}
