package cli

import (
	"context"
	"flag"
	"fmt"
	"runtime"

	"cwm/internal/command"
	"cwm/internal/eval"
	"cwm/internal/passk"
)

type evalCruxCmd struct {
	endpointFlags
	evalOutput
	thinkFlags
	in, mode, api string
	samples       int
	scoreWorkers  int
	limit         int
	showPrompt    bool
	id            string
	countEcho     string
}

func (*evalCruxCmd) Name() string { return "eval cruxeval" }
func (*evalCruxCmd) Synopsis() string {
	return "score a model on CruxEval's output prediction in CWM's four ways of answering"
}
func (*evalCruxCmd) Usage() string {
	return `--model NAME --base-url URL --out OUT.jsonl [--mode MODE] [flags]
Asks the model for the output of each CruxEval problem (the 800 of CRUXEval,
embedded; or --in, a file in its form: {"id", "code", "input", "output"})
and scores each answer as CruxEval's evaluate_score does: an answer that
contains the call f(INPUT) is wrong; otherwise the code followed by
"assert OUTPUT == ANSWER" runs in a sandbox, and the answer is right if it
ends within 3 s without raising.

--mode is how the model answers:
  direct       CruxEval's prompt: two few-shot [PYTHON]/[ANSWER] examples,
               stop at [/ANSWER]
  direct-cot   CruxEval's chain-of-thought prompt ([THOUGHT] first)
  trace-final  CWM's trace prompt, main's first frames given and its return
               frame opened: the model writes the returned value only
  trace-full   CWM's trace prompt: the model writes the whole trace; the
               answer is the value main returns in it
  reasoning    CWM's reasoning system prompt and <think>, then [ANSWER] tags
--api completions (default) sends raw text to /v1/completions (the trace
modes need it; reasoning renders CWM's chat template); --api chat sends the
prompt as messages to /v1/chat/completions. --show-prompt prints the
prompt of one problem (--id, default the first) and exits.

Each sample is one line of --out (the completion, the answer, the verdict,
tokens); the file is appended to, resumed (a re-run asks only for samples
not in it) and holds one mode. --samples N asks N completions per problem
(sample k with --seed+k) for pass@k by the unbiased estimator. --shard i/n
runs shard i of n. --count-echo says how pass@k counts a sample whose answer
repeats the call: wrong (default, the paper's reading: a wrong sample) or
drop (CruxEval's script: left out of the problem's samples unless none is
right; what CruxEval's published tables used). Prints pass@1 (with its standard error), pass@k, tokens
per answer and the verdicts (--json: as JSON). Exits 1 when the model
server failed samples after its retries; a re-run retries them. See
docs/eval.md.

Examples:
  cwm eval cruxeval --model cwm --base-url http://localhost:8000/v1 --mode trace-full --out full.jsonl
  cwm eval cruxeval --mode direct --show-prompt --id sample_3
  cwm eval cruxeval --model qwen3:32b --base-url http://localhost:11434/v1 --api chat \
      --mode reasoning --samples 5 --temperature 0.6 --out reasoning.jsonl`
}

// maxTokensByMode are the default completion lengths: an answer, a
// chain of thought, a value, a whole trace, a reasoning.
var maxTokensByMode = map[eval.Mode]int{eval.Direct: 512, eval.DirectCoT: 2048, eval.TraceFinal: 512,
	eval.TraceFull: 16384, eval.Reasoning: 16384}

func (c *evalCruxCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.in, "in", "", "problems `file` in CruxEval's form (default: CruxEval's 800, embedded)")
	fs.StringVar(&c.mode, "mode", "direct", "how the model answers: direct, direct-cot, trace-final, trace-full or reasoning")
	fs.StringVar(&c.api, "api", "completions", "endpoint: completions (raw text) or chat (messages)")
	fs.IntVar(&c.samples, "samples", 1, "completions per problem (pass@k for k up to N)")
	fs.IntVar(&c.scoreWorkers, "score-workers", runtime.NumCPU(), "sandboxed Python servers scoring answers")
	fs.IntVar(&c.limit, "limit", 0, "only the first `N` problems (0: all)")
	fs.BoolVar(&c.showPrompt, "show-prompt", false, "print the prompt of one problem and exit")
	fs.StringVar(&c.id, "id", "", "the problem --show-prompt shows (default: the first)")
	fs.StringVar(&c.countEcho, "count-echo", string(passk.EchoWrong), "how pass@k counts an answer that repeats the call: wrong or drop (CruxEval's script)")
	c.thinkFlags.register(fs)
	c.evalOutput.register(fs, "sample", "run the (problem, sample) pairs")
	c.endpointFlags.register(fs, evalEndpoint("512 direct and trace-final, 2048 direct-cot, 16384 trace-full and reasoning"))
}

func (c *evalCruxCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	mode, err := eval.ParseMode(c.mode)
	if err != nil {
		return fmt.Errorf("--mode: %w", err)
	}
	api, err := parseAPI(c.api)
	if err != nil {
		return err
	}
	echo, err := passk.ParseEcho(c.countEcho)
	if err != nil {
		return command.Usagef("--count-echo %v", err)
	}
	if c.samples < 1 || c.scoreWorkers < 1 || c.limit < 0 {
		return command.Usagef("--samples and --score-workers must be at least 1, --limit not negative")
	}
	problems := eval.CruxEval()
	if c.in != "" {
		if problems, err = eval.LoadProblems(c.in); err != nil {
			return err
		}
	}
	if c.limit > 0 && c.limit < len(problems) {
		problems = problems[:c.limit]
	}
	if c.showPrompt {
		return c.printPrompt(e, mode, api, problems)
	}
	if err := checkRun(&c.endpointFlags, &c.evalOutput); err != nil {
		return err
	}
	if _, err := eval.BuildPrompt(mode, api, &problems[0]); err != nil {
		return err
	}
	run, err := startSandboxedRun(ctx, e, &c.endpointFlags, &c.evalOutput, maxTokensByMode[mode], c.scoreWorkers, 0)
	if err != nil {
		return err
	}
	defer run.stop()
	opts := eval.Options{Problems: problems, Mode: mode, API: api, Samples: c.samples, Seed: c.seed.ptr(), Think: c.think(),
		Client: run.client, Checker: run.runner, Out: c.out, Shard: run.part, Input: c.in, Concurrency: c.concurrency,
		OnModelError: sampleErrorLogger(e, "cwm eval cruxeval"), CountEcho: echo}
	opts.Progress = progressTo(e, c.quiet)
	sum, err := eval.Run(ctx, opts)
	if err != nil {
		return finishEval(ctx, e, err, c.json, nil, 0)
	}
	return finishEval(ctx, e, nil, c.json, sum, sum.ModelErrors)
}

func (c *evalCruxCmd) printPrompt(e *command.Env, mode eval.Mode, api eval.API, problems []eval.Problem) error {
	p, err := promptOf(problems, c.id, "problem", func(p *eval.Problem) string { return p.ID })
	if err != nil {
		return err
	}
	pr, err := eval.BuildPromptThink(mode, api, p, c.think())
	if err != nil {
		return err
	}
	showPrompt(e, fmt.Sprintf("%s, mode %s, api %s, answer %s", p.ID, mode, api, p.Output), pr)
	return nil
}
