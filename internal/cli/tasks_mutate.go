package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"cwm/internal/command"
	"cwm/internal/envbuild"
	"cwm/internal/mutate"
	"cwm/internal/shard"
	"cwm/internal/tasks"
)

type tasksMutateCmd struct {
	env           string
	out           string
	families      string
	max           int
	perFunction   int
	perOperator   int
	seed          int64
	shard         string
	workers       int
	functions     string
	excludeRepos  string
	fullSuite     bool
	timeoutFactor float64
	json          bool
	quiet         bool
}

func (*tasksMutateCmd) Name() string { return "tasks mutate" }
func (*tasksMutateCmd) Synopsis() string {
	return "make verified mutate-fix tasks from an environment"
}
func (*tasksMutateCmd) Usage() string {
	return `--env ID --out TASKS.jsonl [flags]
Puts bugs into the functions the environment's passing tests execute
(CWM's families: ` + strings.Join(mutate.Families, ", ") + `; and, when asked
for, procedural: SWE-smith's invert if/else, change a constant, swap
operands), keeps the mutants that
make tests fail, and writes each as a verified task in the SWE-bench
instance schema. Each candidate runs its covering tests, then the whole
suite (FAIL_TO_PASS, PASS_TO_PASS), then verification: the buggy tree
fails FAIL_TO_PASS and the gold patch passes both lists, twice each.
Decisions go to TASKS.jsonl.decisions.jsonl; a re-run resumes. The
summary goes to stderr (stdout with --json). See docs/tasks.md.`
}

func (c *tasksMutateCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.env, "env", "", "environment `ID` (id, prefix or name)")
	fs.StringVar(&c.out, "out", "", "tasks `FILE` (JSONL, appended)")
	fs.StringVar(&c.families, "families", "", "comma-separated `families` (default CWM's five; procedural is the extra one)")
	fs.IntVar(&c.max, "max", 0, "stop after `N` verified tasks in the output (0: no limit)")
	fs.IntVar(&c.perFunction, "per-function", 0, "at most `K` tasks per function (0: no cap)")
	fs.IntVar(&c.perOperator, "per-operator", 8, "sites of one operator sampled per function")
	fs.Int64Var(&c.seed, "seed", 1, "seed of the candidates' order and sampling")
	shardFlag(fs, &c.shard, "mutate the covered functions")
	fs.IntVar(&c.workers, "workers", 1, "validate `N` candidates at once, each in its own sandbox")
	fs.StringVar(&c.functions, "functions", "", "only these comma-separated covered functions (names as env coverage takes them)")
	fs.StringVar(&c.excludeRepos, "exclude-repos", "", "decontamination list `FILE` (default: the SWE-bench repositories; none: no check)")
	fs.BoolVar(&c.fullSuite, "full-suite", false, "validate every candidate with the whole suite at every step (the slow baseline, for comparison)")
	fs.Float64Var(&c.timeoutFactor, "timeout-factor", 3, "test-run timeout as a multiple of the baseline's time (plus 5s)")
	fs.BoolVar(&c.json, "json", false, "print the summary as JSON on stdout")
	fs.BoolVar(&c.quiet, "quiet", false, "no progress bar")
}

func (c *tasksMutateCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	if c.env == "" || c.out == "" {
		return command.Usagef("--env and --out are required")
	}
	shard, err := shard.Parse(c.shard)
	if err != nil {
		return command.Usagef("--shard: %v", err)
	}
	fams := splitList(c.families)
	for _, f := range fams {
		if _, ok := mutate.FamilyOperators[f]; !ok {
			return command.Usagef("--families: unknown family %q (want %s)", f, strings.Join(mutate.AllFamilies, ", "))
		}
	}
	if c.max < 0 || c.perFunction < 0 || c.workers < 1 || c.perOperator < 1 {
		return command.Usagef("--max and --per-function must be >= 0, --workers and --per-operator >= 1")
	}
	src, err := openTaskSource(ctx, e, c.env, c.excludeRepos)
	if err != nil {
		return err
	}
	defer src.close()
	cov, err := envbuild.EnsureCoverage(ctx, src.sbs, src.env)
	if err != nil {
		return fmt.Errorf("tasks from %s: test-to-code map: %w", src.env.ID, err)
	}
	progress := progressTo(e, c.quiet)
	sum, err := tasks.Mutate(ctx, src.sbs, src.env, tasks.MutateOptions{Coverage: cov,
		Out: c.out, Families: fams, Max: c.max, PerFunction: c.perFunction, PerOperator: c.perOperator,
		Seed: c.seed, Shard: shard, Workers: c.workers, Functions: splitList(c.functions),
		FullSuite: c.fullSuite, TimeoutFactor: c.timeoutFactor, Exclude: src.excl, Progress: progress, Log: e.Log,
	})
	if sum != nil {
		if c.json {
			if werr := writeJSON(e.Stdout, sum); werr != nil && err == nil {
				err = werr
			}
		} else {
			sum.Write(e.Stderr)
		}
	}
	if err != nil {
		return fmt.Errorf("tasks from %s: %w", src.env.ID, err)
	}
	return nil
}
