package cli

import (
	"context"
	"flag"
	"fmt"
	"os"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/grade"
	"cwm/internal/task"
)

type gradeCmd struct {
	tasks       string
	predictions string
	out         string
	json        bool
}

func (*gradeCmd) Name() string     { return "grade" }
func (*gradeCmd) Synopsis() string { return "grade model patches on tasks, writing SWE-bench's report" }
func (*gradeCmd) Usage() string {
	return `--tasks TASKS.jsonl --predictions PREDS [--out report.json] [--json]
Grades a predictions file (JSONL or a JSON list of objects with
instance_id, model_name_or_path and model_patch, as SWE-bench takes it)
over cwm tasks, whose environments must be in $CWM_HOME: each patch is
graded as cwm reward grades it (a fresh sandbox on the task's buggy tree
and test_patch, the patch by git apply or else patch --fuzz 5, the
FAIL_TO_PASS and PASS_TO_PASS tests run by id). Resolved: every
FAIL_TO_PASS test passes and no PASS_TO_PASS test fails (a skip is no
regression). An empty or null patch, a patch that does not apply and an
instance id no task has are recorded as SWE-bench records them
(empty_patch_ids, error_ids, and unknown_ids, where SWE-bench would stop).
--out writes SWE-bench's run report with each instance's report
(tests_status) under "instances"; --json prints it.`
}

func (c *gradeCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.tasks, "tasks", "", "tasks `file` (JSONL, cwm's task schema)")
	fs.StringVar(&c.predictions, "predictions", "", "predictions `file` (JSONL or a JSON list)")
	fs.StringVar(&c.out, "out", "", "write the report to `FILE` (JSON)")
	fs.BoolVar(&c.json, "json", false, "print the report as JSON")
}

func (c *gradeCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	if c.tasks == "" || c.predictions == "" {
		return command.Usagef("--tasks and --predictions are required")
	}
	ts, err := task.Load(c.tasks)
	if err != nil {
		return err
	}
	preds, err := grade.ReadPredictions(c.predictions)
	if err != nil {
		return err
	}
	sbs, closeRT, err := openSandboxes(e, -1)
	if err != nil {
		return err
	}
	defer closeRT()
	rep, err := grade.Grade(ctx, sbs, ts, preds, grade.Options{Store: env.NewStore(e.Home)})
	if err != nil {
		return err
	}
	if c.out != "" {
		f, err := os.Create(c.out)
		if err != nil {
			return fmt.Errorf("write the report: %w", err)
		}
		err = writeJSON(f, rep)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write the report: %w", err)
		}
	}
	if c.json {
		return writeJSON(e.Stdout, rep)
	}
	fmt.Fprintf(e.Stdout, "%d submitted: %d resolved, %d unresolved, %d empty patches, %d errors, %d unknown ids; %d tasks without prediction\n",
		rep.SubmittedInstances, rep.ResolvedInstances, rep.UnresolvedInstances, rep.EmptyPatchInstances,
		rep.ErrorInstances, len(rep.UnknownIDs), len(rep.IncompleteIDs))
	return nil
}
