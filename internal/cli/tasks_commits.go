package cli

import (
	"context"
	"flag"
	"fmt"
	"os"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/shard"
	"cwm/internal/tasks"
)

type tasksCommitsCmd struct {
	env           string
	out           string
	commits       string
	auto          bool
	keepAll       bool
	max           int
	issueText     string
	ep            endpointFlags
	runs          int
	excludeRepos  string
	timeoutFactor float64
	json          bool
	quiet         bool
	shard         string
}

func (*tasksCommitsCmd) Name() string { return "tasks commits" }
func (*tasksCommitsCmd) Synopsis() string {
	return "make verified issue-fix tasks from fix commits"
}
func (*tasksCommitsCmd) Usage() string {
	return `--env ID (--commits REV,... | --auto) --out TASKS.jsonl [flags]
Makes one task per fix commit of the environment's history (the
environment must come from a git repository). The task's environment is
built at the commit's parent; the commit is split into test changes
(test_patch: files under tests/ or test/, test_*.py, *_test.py,
conftest.py) and the rest (patch). A commit becomes a task when the test
changes alone make tests fail and the fix makes them pass, twice each;
otherwise it is rejected with the reason. --auto proposes every commit
that changes both tests and Python source. The fix classifier scores each
commit from its message (fix, bug, regression, crash, "fixes #N" against
add, feature, implement, support, refactor, docs, release), the issues
it links and how the FAIL_TO_PASS tests fail without the fix (an
assertion or exception in the code under test, or an ImportError,
AttributeError, NameError or unexpected keyword of a name the commit
adds); with --auto, commits it does not call fixes are rejected unless
--keep-all. With --model and --base-url, the model's FIX or NOT A FIX
decides instead (the rules' score stays as evidence; when the model
fails, the rules decide). Every task records its class and reasons
(fix_class). The problem statement is the commit message, or the content
of --issue-text (one commit only), or with a model one it writes from
the failing tests and their messages (never from the fix), asked again
when it quotes a line of the fix and the commit message kept after 3
tries; statement_source says which.`
}

func (c *tasksCommitsCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.env, "env", "", "environment `ID` (id, prefix or name)")
	fs.StringVar(&c.out, "out", "", "tasks `FILE` (JSONL, appended)")
	fs.StringVar(&c.commits, "commits", "", "comma-separated fix `commits`")
	fs.BoolVar(&c.auto, "auto", false, "propose every commit that changes tests and source")
	fs.BoolVar(&c.keepAll, "keep-all", false, "with --auto, keep commits the fix classifier does not call fixes")
	fs.IntVar(&c.max, "max", 0, "stop after `N` tasks in the output (0: no limit)")
	fs.StringVar(&c.issueText, "issue-text", "", "problem statement `FILE` (default: the commit message)")
	c.ep.register(fs, endpointUse{model: "model `NAME` that classifies each commit and writes its problem statement from the failing tests (needs --base-url)"})
	fs.IntVar(&c.runs, "runs", 2, "baseline runs of each parent's environment")
	fs.StringVar(&c.excludeRepos, "exclude-repos", "", "decontamination list `FILE` (default: the SWE-bench repositories; none: no check)")
	fs.Float64Var(&c.timeoutFactor, "timeout-factor", 3, "test-run timeout as a multiple of the baseline's time (plus 5s)")
	fs.BoolVar(&c.json, "json", false, "print every commit's decision as JSON")
	fs.BoolVar(&c.quiet, "quiet", false, "no progress lines")
	shardFlag(fs, &c.shard, "decide the commits (by full hash)")
}

func (c *tasksCommitsCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	if c.env == "" || c.out == "" {
		return command.Usagef("--env and --out are required")
	}
	commits := splitList(c.commits)
	if (len(commits) == 0) == !c.auto {
		return command.Usagef("give either --commits or --auto")
	}
	part, err := shard.Parse(c.shard)
	if err != nil {
		return command.Usagef("--shard: %v", err)
	}
	issue := ""
	if c.issueText != "" {
		b, err := os.ReadFile(c.issueText)
		if err != nil {
			return fmt.Errorf("read issue text: %w", err)
		}
		issue = string(b)
	}
	if (c.ep.model == "") != (c.ep.baseURL == "") {
		return command.Usagef("--model and --base-url go together")
	}
	var writer tasks.Completer
	if c.ep.model != "" {
		client, err := c.ep.client(0)
		if err != nil {
			return err
		}
		writer = client
	}
	src, err := openTaskSource(ctx, e, c.env, c.excludeRepos)
	if err != nil {
		return err
	}
	defer src.close()
	progress := progressTo(e, c.quiet)
	atParent := func(ctx context.Context, base *env.Env, rev string) (*env.Env, error) {
		return envbuild.AtRevision(ctx, src.sbs, base, rev, envbuild.Options{Home: e.Home, Runs: c.runs, Log: e.Log})
	}
	ds, err := tasks.Commits(ctx, src.sbs, src.env, tasks.CommitOptions{Out: c.out, Commits: commits, Auto: c.auto, KeepAll: c.keepAll,
		Max: c.max, IssueText: issue, Model: writer, ModelName: c.ep.model, Build: atParent, TimeoutFactor: c.timeoutFactor,
		Exclude: src.excl, Shard: part, Progress: progress})
	if c.json && ds != nil {
		if werr := writeJSON(e.Stdout, ds); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		return err
	}
	n := 0
	for _, d := range ds {
		if d.InstanceID != "" {
			n++
		}
	}
	if !c.json {
		fmt.Fprintf(e.Stderr, "%d commits decided, %d tasks written\n", len(ds), n)
	}
	return nil
}
