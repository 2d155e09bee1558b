package cli

import (
	"context"
	"flag"
	"fmt"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/shard"
	"cwm/internal/task"
	"cwm/internal/tasks"
)

type tasksValidateCmd struct {
	json          bool
	out           string
	workers       int
	runs          int
	timeoutFactor float64
	shard         string
	quiet         bool
}

func (*tasksValidateCmd) Name() string     { return "tasks validate" }
func (*tasksValidateCmd) Synopsis() string { return "re-verify every task of a tasks file" }
func (*tasksValidateCmd) Usage() string {
	return `[flags] TASKS.jsonl
Re-verifies every task on its environment (which must be in $CWM_HOME):
the buggy tree (bug_patch and test_patch applied) fails every
FAIL_TO_PASS test, so a no-op patch does not resolve it, and the gold patch
makes every FAIL_TO_PASS and PASS_TO_PASS test pass. Prints the tasks that
do not hold, with why, and exits 1 if there is any. --out writes every
verdict as a JSON line (the shard's, with --shard; cwm merge joins them).`
}

func (c *tasksValidateCmd) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print every verdict as JSON")
	fs.StringVar(&c.out, "out", "", "write the verdicts to `FILE` (JSONL, replaced when the run ends)")
	fs.IntVar(&c.workers, "workers", 1, "check `N` tasks at once")
	fs.IntVar(&c.runs, "runs", 1, "run each check `N` times")
	fs.Float64Var(&c.timeoutFactor, "timeout-factor", 3, "test-run timeout as a multiple of the baseline's time (plus 5s)")
	shardFlag(fs, &c.shard, "check the tasks (by instance id)")
	fs.BoolVar(&c.quiet, "quiet", false, "no progress bar")
}

func (c *tasksValidateCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 1 {
		return command.Usagef("want one tasks file")
	}
	if c.workers < 1 || c.runs < 1 {
		return command.Usagef("--workers and --runs must be >= 1")
	}
	part, err := shard.Parse(c.shard)
	if err != nil {
		return command.Usagef("--shard: %v", err)
	}
	ts, err := task.Load(args[0])
	if err != nil {
		return err
	}
	if len(ts) == 0 {
		return fmt.Errorf("%s holds no task", args[0])
	}
	sbs, closeRT, err := openSandboxes(e, -1)
	if err != nil {
		return err
	}
	defer closeRT()
	progress := progressTo(e, c.quiet || c.json)
	verdicts, err := tasks.Validate(ctx, sbs, ts, tasks.ValidateOptions{Store: env.NewStore(e.Home), Workers: c.workers,
		Runs: c.runs, TimeoutFactor: c.timeoutFactor, Shard: part, Progress: progress,
		Out: c.out, Inputs: args[:1]})
	if err != nil {
		return err
	}
	bad := 0
	for _, v := range verdicts {
		if !v.OK {
			bad++
		}
	}
	if c.json {
		if err := writeJSON(e.Stdout, verdicts); err != nil {
			return err
		}
	} else {
		for _, v := range verdicts {
			if !v.OK {
				fmt.Fprintf(e.Stdout, "FAIL %s: %s\n", v.InstanceID, v.Problem)
			}
		}
		fmt.Fprintf(e.Stdout, "%d tasks: %d hold, %d do not\n", len(verdicts), len(verdicts)-bad, bad)
	}
	if bad > 0 {
		return command.ExitStatus(1)
	}
	return nil
}
