package cli

import (
	"context"
	"flag"
	"runtime"
	"time"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/task"
	"cwm/internal/tracer"
)

type traceTestsCmd struct {
	tasks, out    string
	workers       int
	timeout       time.Duration
	maxTestEvents int
	traceRunFlags
}

func (*traceTestsCmd) Name() string { return "trace tests" }
func (*traceTestsCmd) Synopsis() string {
	return "trace tasks' tests before and after their fix (CWM text and plain text)"
}
func (*traceTestsCmd) Usage() string {
	return `--tasks TASKS.jsonl --out TRACES.jsonl [flags]
For each task of TASKS.jsonl (cwm tasks mutate or cwm tasks commits output),
traces its FAIL_TO_PASS tests on the buggy tree (the environment with the
bug and test patches: phase "pre") and on the fixed tree (the gold patch
too: phase "post"), and its PASS_TO_PASS tests once, on the fixed tree.
Each test is recorded in a sandbox on the task's environment with the
tree's patches applied; its trace starts at the test function (marked
"# << START_OF_TRACE" in its file), every call of the repository's code
inlined, the context being the test's file and every file whose code ran.

One line per (instance_id, test_id, affected, phase): id
(INSTANCE_ID/PHASE/TEST_ID), instance_id, test_id, affected (true for
FAIL_TO_PASS), phase, outcome (the test's outcome while traced), the trace
(status, context, codes, frames, text in CWM's grammar), plain (the same as
plain text: a line per event, "FILE:LINE EVENT SOURCE | values"), output,
error and stats. As in CWM's data a trace over --max-events line events or
--max-bytes of text is dropped (status too_long, no frames). A task whose
environment is not in the store, or whose patch does not apply, gets its
lines with status error and the reason (see "Test traces of tasks" in
docs/traces.md).

The run is resumable: tasks whose lines are all in TRACES.jsonl are
skipped, a task cut short gets its missing lines. --shard i/n takes the
tasks of shard i of n; --max N stops once TRACES.jsonl holds N lines.

Examples:
  cwm trace tests --tasks tasks.jsonl --out test-traces.jsonl
  cwm trace tests --tasks tasks.jsonl --out t.jsonl --workers 4 --max 10000`
}

func (c *traceTestsCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.tasks, "tasks", "", "tasks `FILE` (JSON lines)")
	fs.StringVar(&c.out, "out", "", "output `FILE` of test traces (JSON lines, appended)")
	fs.IntVar(&c.workers, "workers", runtime.NumCPU(), "tasks at a time, each phase in its own sandbox")
	fs.DurationVar(&c.timeout, "timeout", time.Minute, "recording time of one test; past it the test runs on untraced")
	fs.IntVar(&c.maxTestEvents, "max-test-events", tracer.TestCaps.MaxEvents, "line events recorded per test (past it: the rest of the test is not recorded)")
	c.traceRunFlags.flags(fs, "trace the tasks (by instance_id)")
}

func (c *traceTestsCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	switch {
	case len(args) > 0:
		return command.Usagef("unexpected arguments %q", args)
	case c.tasks == "" || c.out == "":
		return command.Usagef("--tasks and --out are required")
	case c.workers <= 0 || c.timeout <= 0 || c.maxTestEvents <= 0:
		return command.Usagef("--workers, --timeout and --max-test-events must be positive")
	}
	part, err := c.check()
	if err != nil {
		return err
	}
	tasks, err := task.Load(c.tasks)
	if err != nil {
		return err
	}
	sbs, closeRT, err := openSandboxes(e, -1)
	if err != nil {
		return err
	}
	defer closeRT()
	sum, err := tracer.TraceTaskTests(ctx, sbs, tracer.TestsOptions{Tasks: tasks, Store: env.NewStore(e.Home),
		Out: c.out, In: c.tasks, Workers: c.workers, Max: c.max, Shard: part, Progress: e.Stderr,
		Caps: c.caps(),
		Repo: tracer.RepoOptions{Timeout: c.timeout, Log: e.Log,
			Caps: tracer.Caps{MaxEvents: c.maxTestEvents, MaxRepr: c.maxRepr}}})
	if sum == nil {
		return err
	}
	return c.done(ctx, e, sum, err)
}
