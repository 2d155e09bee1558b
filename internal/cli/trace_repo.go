package cli

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"time"

	"cwm/internal/command"
	"cwm/internal/shard"
	"cwm/internal/tracer"
)

type traceRepoCmd struct {
	env, out, tests string
	maxDepth        int
	stepIn          float64
	seed            int64
	perFunction     int
	workers         int
	timeout         time.Duration
	maxEvents       int
	maxBytes        command.ByteSize
	maxRepr         int
	maxTestEvents   int
	maxTotalBytes   command.ByteSize
	maxEpisodes     int
	shard           string
	context         string
	json            bool
}

func (*traceRepoCmd) Name() string { return "trace repo" }
func (*traceRepoCmd) Synopsis() string {
	return "trace a repository's tests and cut function-level episodes"
}
func (*traceRepoCmd) Usage() string {
	return `--env ID --out TRACES.jsonl [flags]
Runs the environment's passing tests (those passing in every baseline run)
with the tracer installed around each test, recording the calls of the
repository's own code (not the tests, not installed packages), and cuts
each test's recording into function-level episodes (CWM-SPEC 1.5): every
call of a repository function is a candidate root; a callee within
--max-depth of the root is inlined with probability --step-in, otherwise
it is stepped over and becomes an episode of its own. Each episode is a
complete CWM trace whose context is the source of the functions it runs
(each def whole, with the headers of its class; --context module: their
modules whole), the root's def line marked.

An output line has the fields of cwm trace func (id, status, context,
codes, frames, text, output, error, stats) and the test and the function
the episode came from. See docs/traces.md, "Repository traces".

The same --seed gives the same episodes. The run is resumable: tests whose
episodes are all in TRACES.jsonl are skipped. At most
--max-episodes-per-function complete episodes of a function are written
(32; 0: all): episodes are first collected in TRACES.jsonl.spool, then a
seeded choice of N per function is written. An episode over --max-events
or --max-bytes is a too_long line without its trace. --shard i/n traces
the tests of shard i of n.

The run's file (TRACES.jsonl, or the spool) holds at most
--max-total-bytes (1G) and --max-episodes (100000), what earlier runs wrote
included: at either the run takes no more tests and its summary says so; a
rerun with a larger cap goes on. Progress lines start at once: one for the
run, one as each batch of tests begins, the counts every few seconds. The
summary (stderr; stdout with --json) gives the tests traced of all,
the episodes written of those seen, and how many each cap left out.

Examples:
  cwm trace repo --env textkit --out episodes.jsonl
  cwm trace repo --env textkit --out e.jsonl --tests test_distance --step-in 0 --seed 3`
}

func (c *traceRepoCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.env, "env", "", "environment `ID` or name (cwm env ls)")
	fs.StringVar(&c.out, "out", "", "output `FILE` of episodes (JSON lines, appended)")
	fs.StringVar(&c.tests, "tests", "", "only tests whose id matches `PATTERN` (a glob, or else a substring)")
	fs.IntVar(&c.maxDepth, "max-depth", 2, "deepest callee inlined into an episode (the root is 0)")
	fs.Float64Var(&c.stepIn, "step-in", 0.5, "probability that a callee within --max-depth is inlined")
	fs.Int64Var(&c.seed, "seed", 0, "seed of the step-in choices and of --max-episodes-per-function")
	fs.IntVar(&c.perFunction, "max-episodes-per-function", tracer.DefaultPerFunction, "keep at most `N` complete episodes per function (0: all)")
	fs.StringVar(&c.context, "context", tracer.ContextDefs, "what an episode's context holds: `defs` (the functions it runs) or module (their modules whole)")
	fs.BoolVar(&c.json, "json", false, "print the summary as JSON on stdout")
	fs.IntVar(&c.workers, "workers", runtime.NumCPU(), "test runs at a time, each in its own sandbox")
	fs.DurationVar(&c.timeout, "timeout", time.Minute, "recording time of one test; past it the test runs on untraced")
	fs.IntVar(&c.maxEvents, "max-events", tracer.TraceCaps.MaxEvents, "line events per episode (past it: status too_long)")
	c.maxBytes = command.ByteSize(tracer.TraceCaps.MaxBytes)
	fs.Var(&c.maxBytes, "max-bytes", "trace text `BYTES` per episode (past it: status too_long)")
	fs.IntVar(&c.maxRepr, "max-repr", tracer.TestCaps.MaxRepr, "characters of one value's text before it is truncated")
	shardFlag(fs, &c.shard, "trace the tests (by id)")
	c.maxTotalBytes = command.ByteSize(tracer.DefaultMaxTotalBytes)
	fs.Var(&c.maxTotalBytes, "max-total-bytes", "`BYTES` the output (or spool) may hold in all; at it the run stops taking tests")
	fs.IntVar(&c.maxEpisodes, "max-episodes", tracer.DefaultMaxEpisodes, "episodes the output (or spool) may hold in all; at it the run stops taking tests")
	fs.IntVar(&c.maxTestEvents, "max-test-events", tracer.TestCaps.MaxEvents, "line events recorded per test (past it: the rest of the test is not recorded)")
}

func (c *traceRepoCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	switch {
	case len(args) > 0:
		return command.Usagef("unexpected arguments %q", args)
	case c.env == "" || c.out == "":
		return command.Usagef("--env and --out are required")
	case c.context != tracer.ContextDefs && c.context != tracer.ContextModule:
		return command.Usagef("--context %q: want %s or %s", c.context, tracer.ContextDefs, tracer.ContextModule)
	case c.maxDepth < 0 || c.stepIn < 0 || c.stepIn > 1 || c.perFunction < 0:
		return command.Usagef("--max-depth and --max-episodes-per-function must not be negative, --step-in between 0 and 1")
	case c.workers <= 0 || c.timeout <= 0 || c.maxEvents <= 0 || c.maxBytes <= 0 || c.maxRepr < 64 || c.maxTestEvents <= 0 ||
		c.maxTotalBytes <= 0 || c.maxEpisodes <= 0:
		return command.Usagef("--workers, --timeout, --max-events, --max-bytes, --max-test-events, --max-total-bytes, --max-episodes must be positive, --max-repr at least 64")
	}
	part, err := shard.Parse(c.shard)
	if err != nil {
		return command.Usagef("--shard: %v", err)
	}
	en, err := resolveEnv(ctx, e, c.env)
	if err != nil {
		return err
	}
	sr, err := tracer.RepoStage.Start(c.out, part, nil)
	if err != nil {
		return err
	}
	sbs, closeRT, err := openSandboxes(e, -1)
	if err != nil {
		return err
	}
	defer closeRT()
	sum, err := tracer.TraceRepo(ctx, sbs, tracer.RepoRunOptions{Env: en, Tests: c.tests, Out: c.out,
		PerFunction: c.perFunction, MaxTotalBytes: int64(c.maxTotalBytes), MaxEpisodes: c.maxEpisodes, Shard: part, Progress: e.Stderr,
		Episode: tracer.EpisodeOptions{MaxDepth: c.maxDepth, StepIn: c.stepIn, Seed: c.seed, Context: c.context,
			Caps: tracer.Caps{MaxEvents: c.maxEvents, MaxBytes: int(c.maxBytes)}},
		Repo: tracer.RepoOptions{Workers: c.workers, Timeout: c.timeout,
			Caps: tracer.Caps{MaxEvents: c.maxTestEvents, MaxRepr: c.maxRepr}, Log: e.Log}})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted; run the same command again to resume: %w", ctx.Err())
		}
		return err
	}
	if c.json {
		if err := writeJSON(e.Stdout, sum); err != nil {
			return err
		}
	} else {
		sum.Write(e.Stderr)
	}
	return sr.Finish(sum.Tests)
}
