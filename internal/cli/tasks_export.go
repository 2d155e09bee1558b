package cli

import (
	"context"
	"flag"
	"fmt"
	"os"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/task"
	"cwm/internal/taskexport"
)

type tasksExportCmd struct {
	format   string
	out      string
	json     bool
	noImages bool
}

func (*tasksExportCmd) Name() string     { return "tasks export" }
func (*tasksExportCmd) Synopsis() string { return "write tasks as SWE-bench instances or Harbor tasks" }
func (*tasksExportCmd) Usage() string {
	return `--format swebench|harbor --out DIR [flags] TASKS.jsonl
Writes the tasks (whose environments must be in $CWM_HOME) in a format
the field's harnesses run and grade (docs/tasks.md, "Exporting tasks"):

  swebench  DIR/instances.jsonl, rows for swebench 5.0.2's harness:
            base_commit is a commit holding the bug, on a branch named
            for the instance in the bare mirror DIR/repos/ENV.git, so the
            gold patch applies there; eval_script, log_parser
            (parse_log_pytest), eval_type; image, written as OCI image
            layouts in DIR/images/ENV (the environment's base and layer
            flattened, tagged latest, and a layer per task whose /repo is
            at base_commit, tagged for the task); an environment on the
            host's root has none.
  harbor    DIR/INSTANCE/ task directories (task format 1.3):
            instruction.md, task.toml, environment/Dockerfile,
            tests/test.sh (writes /logs/verifier/reward.txt),
            solution/solve.sh; and the mirrors, as for swebench.

A FAIL_TO_PASS or PASS_TO_PASS test whose id SWE-bench's pytest parser
cannot report (an id with a space; two ids cut to the same key) is left
out and counted; a task left with no FAIL_TO_PASS, or whose environment
does not test with pytest, is dropped with the reason. The summary goes
to stderr (--json: stdout).`
}

func (c *tasksExportCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.format, "format", "", "`FORMAT`: swebench or harbor")
	fs.StringVar(&c.out, "out", "", "write into `DIR` (made if missing)")
	fs.BoolVar(&c.json, "json", false, "print the summary as JSON on stdout")
	fs.BoolVar(&c.noImages, "no-images", false, "do not write the images (image and docker_image still name them)")
}

func (c *tasksExportCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 1 {
		return command.Usagef("want one tasks file")
	}
	if c.out == "" {
		return command.Usagef("--out DIR is required")
	}
	write := map[string]func(context.Context, *env.Sandboxes, []task.Task, string, taskexport.Options) (*taskexport.Summary, error){
		"swebench": taskexport.SWEBench, "harbor": taskexport.Harbor}[c.format]
	if write == nil {
		return command.Usagef("--format must be swebench or harbor, not %q", c.format)
	}
	ts, err := task.Load(args[0])
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return fmt.Errorf("make %s: %w", c.out, err)
	}
	sbs, closeRT, err := openSandboxes(e, -1)
	if err != nil {
		return err
	}
	defer closeRT()
	sum, err := write(ctx, sbs, ts, c.out, taskexport.Options{Store: env.NewStore(e.Home), NoImages: c.noImages})
	if err != nil {
		return fmt.Errorf("export %s: %w", args[0], err)
	}
	if c.json {
		return writeJSON(e.Stdout, sum)
	}
	for _, d := range sum.Dropped {
		fmt.Fprintf(e.Stderr, "dropped %s: %s\n", d.InstanceID, d.Reason)
	}
	for id, why := range sum.NoImage {
		fmt.Fprintf(e.Stderr, "no image for %s: %s\n", id, why)
	}
	fmt.Fprintf(e.Stderr, "%d tasks: %d exported as %s to %s, %d dropped; %d test ids left out\n",
		sum.Tasks, sum.Exported, sum.Format, sum.Out, len(sum.Dropped), sum.LeftOutTests)
	return nil
}
