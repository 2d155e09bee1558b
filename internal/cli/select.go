package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/model"
	"cwm/internal/selection"
	"cwm/internal/shard"
	"cwm/internal/task"
)

type selectCmd struct {
	tasks, candidates, out, model, baseURL string
	name, method, apiKeyEnv, shard         string
	verifierModel                          string
	k, tests, keep, regression             int
	concurrency, retries                   int
	temperature                            optFloat
	maxTokens                              int
	requestTimeout                         time.Duration
	noCurves, json, quiet                  bool
}

func (*selectCmd) Name() string { return "select" }
func (*selectCmd) Synopsis() string {
	return "pick the best of k candidate patches per task with generated tests (best@k)"
}
func (*selectCmd) Usage() string {
	return `--tasks TASKS.jsonl --candidates C.jsonl --model NAME --base-url URL --out PRED.jsonl [flags]
For each task with candidates in --candidates (SWE-bench predictions, several
lines per instance, or cwm forage trajectories; the first --k of each task),
picks one patch and writes it as a SWE-bench prediction line
(instance_id, model_name_or_path, model_patch) with cwm's account of the
pick: every candidate's class, votes, kept-test verdicts and score, the
kept tests, the regression set and why the winner won.

The procedure (CWM's best@k): the model writes --tests tests from the
issue and the files the candidates touch (the prompt is
internal/selection/prompts/generate_test.md); each runs on the unpatched
tree and is kept when it prints "Issue reproduced" there. Each distinct
patch (normalised: context, hunk and file order, whitespace, comments do
not count) runs the reproducing tests in a fresh sandbox; the --keep tests
the most candidates pass are kept. The regression set is the tests passing
on the unpatched tree, the task's hidden tests excluded (--regression N
samples it). The pick is the patch with the most tests passed, ties by
votes among equivalent patches, then fewest tokens; empty patches never
win. A patch's regression run stops once it cannot win.

--method best (default), majority (the most common normalised patch, no
execution) or hybrid (R2E-Gym's: among the patches tied at the most tests
passed, the one --verifier-model gives the highest P("YES"), read from
the logprobs of its <judgement>; the endpoint must return logprobs).
Unless --no-curves, every candidate
is then graded with the hidden tests and the summary shows pass@k,
majority@k and best@k for k = 1, 2, 4 ... K (subsets: see docs/select.md).
The generated tests are kept in PRED.jsonl.tests/INSTANCE.json.

--out is appended to and resumed by instance_id; --shard i/n takes the
tasks of shard i of n. Exits 1 when a task could not be selected (a
re-run retries it). See docs/select.md.

Example:
  cwm select --tasks tasks.jsonl --candidates traj.jsonl --k 16 \
      --model Qwen/Qwen3-32B --base-url http://localhost:8000/v1 --out pred.jsonl`
}

func (c *selectCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.tasks, "tasks", "", "tasks `file` (JSONL, cwm's task schema)")
	fs.StringVar(&c.candidates, "candidates", "", "candidate patches `file`: SWE-bench predictions or forage trajectories (JSONL)")
	fs.StringVar(&c.out, "out", "", "predictions `file` (JSONL; appended to, resumed)")
	fs.StringVar(&c.model, "model", "", "test-writing model `name` as the server knows it")
	fs.StringVar(&c.baseURL, "base-url", "", "OpenAI-compatible endpoint `URL`, e.g. http://localhost:8000/v1")
	fs.StringVar(&c.apiKeyEnv, "api-key-env", "OPENAI_API_KEY", "environment `variable` holding the API key")
	fs.StringVar(&c.name, "name", "", "model_name_or_path of the predictions (default cwm-select-METHOD)")
	fs.StringVar(&c.method, "method", "best", "how to pick: best, majority or hybrid")
	fs.StringVar(&c.verifierModel, "verifier-model", "", "hybrid's verifier `name` on the same endpoint (default: --model); asked at temperature 0")
	fs.IntVar(&c.k, "k", 0, "candidates per task, the first K (0: all)")
	fs.IntVar(&c.tests, "tests", 40, "tests the model writes per task")
	fs.IntVar(&c.keep, "keep", 5, "reproducing tests kept: those the most candidates pass")
	fs.IntVar(&c.regression, "regression", 0, "regression tests sampled per task (0: all)")
	fs.IntVar(&c.concurrency, "concurrency", 2, "tasks at once")
	shardFlag(fs, &c.shard, "select the tasks")
	fs.Var(&c.temperature, "temperature", "sampling temperature of the tests (default: the server's)")
	fs.IntVar(&c.maxTokens, "max-tokens", 0, "completion `tokens` per test (0: the server's default)")
	fs.IntVar(&c.retries, "retries", 6, "retries of a failed model request (429, 5xx, network, timeout)")
	fs.DurationVar(&c.requestTimeout, "request-timeout", 10*time.Minute, "limit of one model request")
	fs.BoolVar(&c.noCurves, "no-curves", false, "do not grade the candidates with the hidden tests (no resolved rate, no curves)")
	fs.BoolVar(&c.json, "json", false, "print the summary as JSON")
	fs.BoolVar(&c.quiet, "quiet", false, "print no progress")
}

func (c *selectCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	method := selection.Method(c.method)
	switch {
	case c.tasks == "" || c.candidates == "" || c.out == "" || c.model == "" || c.baseURL == "":
		return command.Usagef("--tasks, --candidates, --out, --model and --base-url are required")
	case method != selection.MethodBest && method != selection.MethodMajority && method != selection.MethodHybrid:
		return command.Usagef("--method %q: want best, majority or hybrid", c.method)
	case c.verifierModel != "" && method != selection.MethodHybrid:
		return command.Usagef("--verifier-model is for --method hybrid")
	case c.k < 0 || c.tests < 1 || c.keep < 1 || c.regression < 0 || c.concurrency < 1:
		return command.Usagef("--tests, --keep and --concurrency must be at least 1, --k and --regression not negative")
	}
	part, err := shard.Parse(c.shard)
	if err != nil {
		return command.Usagef("--shard: %v", err)
	}
	retries := c.retries
	if retries == 0 {
		retries = -1 // the client's 0 means its default
	}
	client, err := model.NewClient(model.ClientConfig{BaseURL: c.baseURL, APIKey: os.Getenv(c.apiKeyEnv), Model: c.model,
		Sampling:   model.Sampling{Temperature: c.temperature.ptr(), MaxTokens: c.maxTokens},
		MaxRetries: retries, RequestTimeout: c.requestTimeout})
	if err != nil {
		return err
	}
	var verifier *model.Client
	if method == selection.MethodHybrid {
		name := c.verifierModel
		if name == "" {
			name = c.model
		}
		zero := 0.0
		if verifier, err = model.NewClient(model.ClientConfig{BaseURL: c.baseURL, APIKey: os.Getenv(c.apiKeyEnv), Model: name,
			Sampling: model.Sampling{Temperature: &zero}, MaxRetries: retries, RequestTimeout: c.requestTimeout}); err != nil {
			return err
		}
	}
	tasks, err := task.Load(c.tasks)
	if err != nil {
		return fmt.Errorf("load tasks: %w", err)
	}
	name := c.name
	if name == "" {
		name = "cwm-select-" + c.method
	}
	opts := selection.Options{
		Config: selection.Config{Client: client, Verifier: verifier, Tests: c.tests, Keep: c.keep, Regression: c.regression,
			Method: method, Curves: !c.noCurves},
		Tasks: tasks, Candidates: c.candidates, K: c.k, Out: c.out, Name: name,
		Store: env.NewStore(e.Home), Workers: c.concurrency, Shard: part, TasksFile: c.tasks}
	if !c.quiet {
		opts.Progress = e.Stderr
	}
	sbs, closeRT, err := openSandboxes(e, c.concurrency)
	if err != nil {
		return err
	}
	defer closeRT()
	sum, errs, err := selection.Run(ctx, sbs, opts)
	if err != nil {
		return err
	}
	for _, te := range errs {
		fmt.Fprintf(e.Stderr, "cwm select: %s: %s\n", te.ID, te.Error)
	}
	if c.json {
		err = writeJSON(e.Stdout, sum)
	} else {
		sum.Write(e.Stdout)
	}
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d tasks could not be selected; run again to retry them", len(errs))
	}
	return nil
}
