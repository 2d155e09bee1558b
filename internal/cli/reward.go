package cli

import (
	"context"
	"flag"
	"fmt"
	"runtime"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/reward"
	"cwm/internal/shard"
	"cwm/internal/task"
)

type rewardCmd struct {
	tasks, in, out string
	gradeFlags
	concurrency int
	shard       string
	json        bool
}

func (*rewardCmd) Name() string { return "reward" }
func (*rewardCmd) Synopsis() string {
	return "grade predicted patches or agent trajectories with the tasks' hidden tests"
}
func (*rewardCmd) Usage() string {
	return `--tasks TASKS.jsonl --in PREDICTIONS.jsonl --out SCORED.jsonl [flags]
Grades every line of --in against its task in --tasks: in a fresh sandbox
on the task's environment, the task's bug_patch and test_patch are applied,
then the candidate patch (git apply, else patch --fuzz), and only the
task's FAIL_TO_PASS and PASS_TO_PASS tests run; the task is resolved when
all of them pass. The similarity to the task's gold patch is CWM's.

--in holds SWE-bench predictions ({"instance_id", "model_patch",
"model_name_or_path"}) or trajectories of cwm forage ("task_id",
"sample", "submitted_patch", "patch": the submitted patch is graded, or
the final diff when nothing was submitted). Each output line is the input
line with resolved, reward, similarity, similarity_per_file, hidden_tests,
apply, graded_patch, advantage (reward minus the mean reward of the
samples of the same task and model, when there are several) and grading
(details and durations) added. Lines of a task are written together once
all of them are graded. Lines already in --out are skipped, so an
interrupted run resumes. --shard i/n grades the task groups of shard i
of n. Lines naming unknown tasks are reported and skipped. Exits 1 when a
line could not be graded. See docs/rewards.md.`
}

func (c *rewardCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.tasks, "tasks", "", "tasks `file` (JSONL, cwm's task schema)")
	fs.StringVar(&c.in, "in", "", "predictions or trajectories `file` (JSONL)")
	fs.StringVar(&c.out, "out", "", "scored output `file` (JSONL; appended to, resumed)")
	c.gradeFlags.register(fs)
	fs.IntVar(&c.concurrency, "concurrency", runtime.NumCPU(), "gradings run at once")
	shardFlag(fs, &c.shard, "grade the task groups (task and model)")
	fs.BoolVar(&c.json, "json", false, "print the summary as JSON")
}

func (c *rewardCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	if c.tasks == "" || c.in == "" || c.out == "" {
		return command.Usagef("--tasks, --in and --out are required")
	}
	if err := c.mapping.Validate(); err != nil {
		return err
	}
	if c.concurrency < 1 {
		return command.Usagef("--concurrency %d is below 1", c.concurrency)
	}
	part, err := shard.Parse(c.shard)
	if err != nil {
		return command.Usagef("--shard: %v", err)
	}
	tasks, err := task.Load(c.tasks)
	if err != nil {
		return fmt.Errorf("load tasks: %w", err)
	}
	sc, err := reward.NewScoring(reward.ScoreOptions{Tasks: tasks, In: c.in, Out: c.out, Mapping: c.mapping,
		Store: env.NewStore(e.Home), Workers: c.concurrency, Shard: part, Progress: e.Stderr})
	if err != nil {
		return err
	}
	if len(sc.Unknown) > 0 {
		fmt.Fprintf(e.Stderr, "cwm reward: skipped %d lines whose task is not in %s: %s\n", sc.Unknown.Lines(), c.tasks, sc.Unknown)
	}
	for _, b := range sc.Bad {
		fmt.Fprintf(e.Stderr, "cwm reward: %s:%d: %s\n", c.in, b.Line, b.Error)
	}
	var sbs *env.Sandboxes
	if sc.Pending() > 0 {
		var closeRT func()
		if sbs, closeRT, err = openSandboxes(e, c.concurrency); err != nil {
			return err
		}
		defer closeRT()
	}
	sum, errs, err := sc.Run(ctx, sbs)
	if err != nil {
		return err
	}
	for _, le := range errs {
		fmt.Fprintf(e.Stderr, "cwm reward: %s:%d (%s): %s\n", c.in, le.Line, le.ID, le.Error)
	}
	if c.json {
		err = writeJSON(e.Stdout, sum)
	} else {
		err = sum.Write(e.Stdout)
	}
	if err != nil {
		return err
	}
	// Lines that could not be graded are graded by a re-run (the stage
	// left its shard unfinished); lines that are not predictions never
	// are, and do not keep the shard open.
	if len(errs) > 0 || len(sc.Bad) > 0 {
		return command.ExitStatus(1)
	}
	return nil
}
