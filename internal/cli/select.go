package cli

import (
	"context"
	"flag"
	"fmt"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/model"
	"cwm/internal/selection"
	"cwm/internal/shard"
	"cwm/internal/task"
)

type selectCmd struct {
	tasks, candidates, out           string
	ep                               endpointFlags
	name, method, shard              string
	verifierModel                    string
	k, tests, keep, regression       int
	concurrency                      int
	noCurves, json, quiet            bool
	verifyEach                       bool
	majority, regressionSet, testgen string
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
issue and the files the candidates touch (--testgen prompt, the default;
the prompt is internal/selection/prompts/generate_test.md), or, with
--testgen agent, as an agent with bash and file tools in the unpatched
repository, one episode per test (CWM's test-generation environment: it
writes and submits test_issue.py, which must name both "Issue reproduced"
and "Issue resolved"); each runs on the unpatched tree and is kept when it
prints "Issue reproduced" there. Each distinct
patch (normalised: context, hunk and file order, whitespace, comments do
not count) runs the reproducing tests in a fresh sandbox; the --keep tests
the most candidates pass are kept. The regression set is CWM's: the
existing tests passing on the unpatched tree, PASS_TO_PASS included (it is
in the repository the agent sees), FAIL_TO_PASS never (--regression-set
strict leaves out PASS_TO_PASS too; --regression N samples it). The pick
is the patch with the most tests passed, ties by votes among equivalent
patches, then fewest tokens; empty patches never win. A patch's regression
run stops once it cannot win.

--method best (default), majority (no execution: CWM's released voting,
the most common patch text, empty ones skipped, ties to the first in the
order its script shuffles into, seeded with --name; --majority normalised
groups normalised patches instead, ties to fewer tokens), hybrid (R2E-Gym's get_hybrid_aggregation: of the half of the
patches (at least 3) to which --verifier-model gives the highest P("YES"),
read from the logprobs of its <judgement>, those with the most regression
tests passed, then the most kept tests, then the highest P("YES"); ties go
to votes, tokens, order, and the curves average over them) or
best-verifier (best@k, then the highest P("YES") among the patches tied at
the most tests passed). The verifier's endpoint must return logprobs; it
judges each class of equal patches once, or each candidate with its own
trajectory with --verify-each. --model and --base-url are needed unless
the method is majority with --no-curves, which asks no model.
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
	c.ep.register(fs, endpointUse{model: "test-writing model `name` as the server knows it", sampling: true,
		temperature: "sampling temperature of the tests (default: the server's)", per: "test"})
	fs.StringVar(&c.name, "name", "", "model_name_or_path of the predictions (default cwm-select-METHOD)")
	fs.StringVar(&c.method, "method", "best", "how to pick: best, majority, hybrid or best-verifier")
	fs.StringVar(&c.verifierModel, "verifier-model", "", "the verifier `name` of hybrid and best-verifier on the same endpoint (default: --model); asked at temperature 0")
	fs.StringVar(&c.majority, "majority", selection.GroupExact, "majority@k's grouping: exact (CWM's released voting) or normalised")
	fs.BoolVar(&c.verifyEach, "verify-each", false, "ask the verifier about every candidate with its trajectory, not once per class of equal patches")
	fs.IntVar(&c.k, "k", 0, "candidates per task, the first K (0: all)")
	fs.IntVar(&c.tests, "tests", 40, "tests the model writes per task")
	fs.StringVar(&c.testgen, "testgen", selection.TestgenPrompt, "how the tests are written: prompt (issue and touched files) or agent (CWM's test-generation episodes)")
	fs.IntVar(&c.keep, "keep", 5, "reproducing tests kept: those the most candidates pass")
	fs.IntVar(&c.regression, "regression", 0, "regression tests sampled per task (0: all)")
	fs.StringVar(&c.regressionSet, "regression-set", selection.RegressionExisting, "existing (CWM's: passing tests, PASS_TO_PASS included, FAIL_TO_PASS never) or strict (no test the task grades with)")
	fs.IntVar(&c.concurrency, "concurrency", 2, "tasks at once")
	shardFlag(fs, &c.shard, "select the tasks")
	fs.BoolVar(&c.noCurves, "no-curves", false, "do not grade the candidates with the hidden tests (no resolved rate, no curves)")
	fs.BoolVar(&c.json, "json", false, "print the summary as JSON")
	fs.BoolVar(&c.quiet, "quiet", false, "print no progress")
}

func (c *selectCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	method := selection.Method(c.method)
	_, known := selection.MethodVersions[method]
	asksModel := method != selection.MethodMajority || !c.noCurves
	verifies := method == selection.MethodHybrid || method == selection.MethodBestVerifier
	switch {
	case c.tasks == "" || c.candidates == "" || c.out == "":
		return command.Usagef("--tasks, --candidates and --out are required")
	case !known:
		return command.Usagef("--method %q: want best, majority, hybrid or best-verifier", c.method)
	case asksModel && (c.ep.model == "" || c.ep.baseURL == ""):
		return command.Usagef("--model and --base-url are required (only --method majority with --no-curves asks no model)")
	case c.testgen != selection.TestgenPrompt && c.testgen != selection.TestgenAgent:
		return command.Usagef("--testgen %q: want prompt or agent", c.testgen)
	case c.regressionSet != selection.RegressionExisting && c.regressionSet != selection.RegressionStrict:
		return command.Usagef("--regression-set %q: want existing or strict", c.regressionSet)
	case c.majority != selection.GroupExact && c.majority != selection.GroupNormalised:
		return command.Usagef("--majority %q: want exact or normalised", c.majority)
	case (c.verifierModel != "" || c.verifyEach) && !verifies:
		return command.Usagef("--verifier-model and --verify-each are for --method hybrid and best-verifier")
	case c.k < 0 || c.tests < 1 || c.keep < 1 || c.regression < 0 || c.concurrency < 1:
		return command.Usagef("--tests, --keep and --concurrency must be at least 1, --k and --regression not negative")
	}
	part, err := shard.Parse(c.shard)
	if err != nil {
		return command.Usagef("--shard: %v", err)
	}
	var client, verifier *model.Client
	if asksModel {
		if client, err = c.ep.client(0); err != nil {
			return err
		}
	}
	if verifies {
		cfg := c.ep.config(0)
		if c.verifierModel != "" {
			cfg.Model = c.verifierModel
		}
		zero := 0.0
		cfg.Sampling = model.Sampling{Temperature: &zero}
		if verifier, err = model.NewClient(cfg); err != nil {
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
		Config: selection.Config{Client: client, Verifier: verifier, VerifyEach: c.verifyEach, Majority: c.majority, RegressionSet: c.regressionSet, Testgen: c.testgen, Tests: c.tests, Keep: c.keep, Regression: c.regression,
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
