package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"cwm/internal/base"
	"cwm/internal/basebuild"
	"cwm/internal/command"
	"cwm/internal/egress"
	"cwm/internal/env"
	"cwm/internal/errkind"
	"cwm/internal/sandbox"
	"cwm/internal/taskimport"
)

type tasksImportCmd struct {
	format   string
	mirror   string
	out      string
	report   string
	runs     int
	platform string
	quiet    bool
	// offline and allowHosts say what a Harbor task's Dockerfile RUN
	// steps (or --native's install steps) reach.
	offline    bool
	allowHosts command.StringList
	nativeFlags
}

func (*tasksImportCmd) Name() string { return "tasks import" }
func (*tasksImportCmd) Synopsis() string {
	return "import a SWE-bench-family dataset's tasks, images and all, validated"
}
func (*tasksImportCmd) Usage() string {
	return `--format FORMAT [flags] FILE|DIR
Imports the instances of a published dataset: FILE holds its rows as the
dataset publishes them (JSONL, a JSON list, or Parquet), FORMAT is one of
swebench, swe-gym, r2e-gym, swe-smith, swe-rebench-v2. FAIL_TO_PASS and
PASS_TO_PASS may be lists or JSON-encoded strings.

The image each row names (image_name, docker_image, or SWE-bench's naming
rule sweb.eval.x86_64.<id>) is pulled without Docker, from its registry or
from --registry-mirror HOST, and stored as a base by digest (as cwm base
import does). Each task is then validated in sandboxes on its image, the
way its dataset's harness grades it (working directory, PATH, test
command, log parser, hidden tests, test files restored at base_commit):
--runs times with the empty patch (FAIL_TO_PASS must fail) and --runs
times with the gold patch (every FAIL_TO_PASS and PASS_TO_PASS test must
pass). The tasks that hold go to --out; a row or a task that does not is
left out with its reason (bad row, duplicate instance_id, image missing,
patch does not apply, gold fails, no-op passes, flaky, parser found no
tests) in the validation report (--report, JSON), and the rest of the file
is imported. Prints the report's summary line; exits 1 when no task holds.
Each image also becomes an environment of the store (image-..., named by
the image), which the tasks name in env_id: forage, serve, reward,
select, grade and trace repo run them as they run native tasks, graded
by the dataset's harness.

With --format harbor, DIR is a Harbor task directory (instruction.md,
task.toml, environment/, tests/test.sh, solution/solve.sh) or a directory
of them. The environment is task.toml's [environment] docker_image, or
else environment/Dockerfile carried out by cwm without Docker: FROM, RUN
(in a sandbox; through cwm's egress relay to the host's package index and
Debian mirror and --allow-host, or with no network under --offline), COPY
and ADD from environment/ (never outside it), WORKDIR, ENV, ARG, USER;
any other instruction is refused by its line. tests/ and solution/ wait
at /cwm-harbor until grading copies them to /tests and /solution. A task
holds when solution/solve.sh then tests/test.sh gives reward 1 (in
/logs/verifier/reward.txt or reward.json) --runs times, and tests/test.sh
alone gives less --runs times (an environment that does not build: the
reason "environment build fails").
docs/tasks.md ("Importing the field's datasets") has each dataset's table.

With --native (SWE-bench rows), no image is pulled: each (repository,
version) gets one environment, built by cwm env build from the clone in
--repos DIR (owner/name or owner+name, bare or not) at the version's
environment_setup_commit, by the specification of the swebench package
that --swebench-python imports (4.x, which has MAP_REPO_VERSION_TO_SPECS):
its Python (or the nearest newer one a base has), its conda packages and
requirement files translated to pip or the base's Debian packages, its
pip packages, pre-install and install lines, online through the relay.
Each instance is then validated on its version's environment at its
base_commit, with the harness's test command and parser. What could not
be translated, and each group's Python specified and used, are in the
report's groups; causes (clone missing, python unavailable, install
failed: the step and pip's error) are classes of its left-out rows.
docs/tasks.md ("SWE-bench from source") has the translation table.`
}

func (c *tasksImportCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.format, "format", "", "the dataset's `FORMAT`: "+strings.Join(taskimport.Formats, ", "))
	fs.StringVar(&c.mirror, "registry-mirror", "", "pull the images from `HOST` (host[:port]) instead of their registries")
	fs.StringVar(&c.out, "out", "tasks.jsonl", "write the tasks that hold to `FILE`")
	fs.StringVar(&c.report, "report", "", "write the validation report to `FILE` (default: --out's name with .report.json)")
	fs.IntVar(&c.runs, "runs", 3, "grade each task `N` times with the gold patch and N times with the empty one")
	fs.StringVar(&c.platform, "platform", "linux/amd64", "the `OS/ARCH` to take from an image index")
	fs.BoolVar(&c.quiet, "quiet", false, "no progress")
	fs.BoolVar(&c.offline, "offline", false, "harbor: a Dockerfile's RUN steps get no network")
	fs.Var(&c.allowHosts, "allow-host", "let a Harbor Dockerfile's RUN steps, or --native's install steps, reach `HOST` too (NAME, NAME:PORT, *.SUFFIX or IP:PORT; repeatable)")
	fs.BoolVar(&c.native, "native", false, "build SWE-bench's rows from source (--repos), not from their images")
	fs.StringVar(&c.repos, "repos", "", "with --native: the `DIR` holding a clone of each repository (owner/name or owner+name)")
	fs.StringVar(&c.python, "swebench-python", "", "with --native: the `PYTHON` whose swebench (4.x) gives the specifications (default: the first python3 on PATH that has it)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Minute, "with --native: bound each test run to `DURATION`")
	fs.StringVar(&c.priorTo, "uploaded-prior-to", "none", "with --native: install only releases uploaded before `DATE` (2025-07-01, an RFC 3339 time, or none: the newest), the index as it was when the harness built its images")
}

func (c *tasksImportCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 1 {
		return command.Usagef("want one FILE of rows (or, for harbor, one DIR)")
	}
	if c.format == "" {
		return command.Usagef("--format is required (%s)", strings.Join(taskimport.Formats, ", "))
	}
	if c.runs < 1 {
		return command.Usagef("--runs must be >= 1")
	}
	report := c.report
	if report == "" {
		report = strings.TrimSuffix(c.out, ".jsonl") + ".report.json"
	}
	if c.native {
		if c.offline {
			return command.Usagef("--offline is for --format harbor: --native installs from the index")
		}
		return c.runNative(ctx, e, args[0], report)
	}
	if c.repos != "" {
		return command.Usagef("--repos is for --native")
	}
	if c.format != "harbor" && (c.offline || len(c.allowHosts) > 0) {
		return command.Usagef("--offline and --allow-host are for --format harbor (a Dockerfile's RUN steps) or --native")
	}
	if c.offline && len(c.allowHosts) > 0 {
		return command.Usagef("--allow-host is for RUN steps with a network: --offline has none")
	}
	var policy *egress.Policy
	if c.format == "harbor" && !c.offline {
		var err error
		if policy, err = egressPolicy(ctx, c.allowHosts); err != nil {
			return err
		}
	}
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: e.Home, Log: e.Log})
	if err != nil {
		return fmt.Errorf("start sandbox runtime: %w", err)
	}
	defer rt.Close()
	o := taskimport.Options{Format: c.format, Mirror: c.mirror, Runs: c.runs,
		Sandboxes: taskimport.Sandboxes{Runtime: rt, Store: base.NewStore(e.Home), Envs: env.NewStore(e.Home)},
		Base:      basebuild.Options{Runtime: rt, Platform: c.platform}, Egress: policy}
	if !c.quiet {
		o.Progress = c.progress(e)
	}
	ts, rep, err := taskimport.Import(ctx, args[0], o)
	if err != nil {
		if errkind.Of(err) == errkind.Usage {
			return command.Usagef("%v", err)
		}
		return err
	}
	if err := writeTasks(c.out, ts); err != nil {
		return err
	}
	b, err := taskimport.MarshalReport(rep)
	if err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	if err := os.WriteFile(report, b, 0o644); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	fmt.Fprintln(e.Stdout, rep.Summary())
	if len(ts) == 0 && rep.Rows > 0 {
		return errkind.Errorf(errkind.Input, "no task of %s holds (the reasons are in %s)", args[0], report)
	}
	return nil
}

// progress prints each task as it is decided.
func (c *tasksImportCmd) progress(e *command.Env) func(id, class, reason string) {
	return func(id, class, reason string) {
		if class == "" {
			fmt.Fprintf(e.Stderr, "ok   %s\n", id)
			return
		}
		fmt.Fprintf(e.Stderr, "left %s: %s: %s\n", id, class, reason)
	}
}
