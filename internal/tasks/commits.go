package tasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"cwm/internal/batch"
	"cwm/internal/env"
	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/sandbox"
	"cwm/internal/shard"
	"cwm/internal/task"
	"cwm/internal/testrun"
)

// CommitOptions configure an issue-fix run over a repository's history.
type CommitOptions struct {
	// Out is the tasks file; decisions go to Out.decisions.jsonl.
	Out string
	// Commits are the fix commits (any revision git understands); Auto
	// proposes every commit that changes both tests and source instead.
	Commits []string
	Auto    bool
	// KeepAll keeps, with Auto, the commits the fix classifier does not
	// call fixes (features, refactorings); by default they are rejected.
	// Given commits are always kept; every task records its class.
	KeepAll bool
	// Max is how many tasks to write, counting those already in Out (0:
	// no limit).
	Max int
	// IssueText, when set, is the problem statement (one commit only);
	// otherwise the commit message is.
	IssueText string
	// Model, when set, gives the fix classifier's verdict (the rules'
	// score stays as evidence; when the model fails, the rules decide)
	// and, without IssueText, writes each task's problem statement from
	// its failing tests, never from the fix; a statement that quotes a
	// line of the fix is asked again, and after statementTries the
	// commit message stays. ModelName names it in fix_class and
	// statement_source.
	Model     Completer
	ModelName string
	// Build builds the environment of e's repository at revision rev with
	// e's recipe (envbuild.AtRevision does): each task runs in the
	// environment at its commit's parent. An error of kind errkind.Input
	// rejects the commit; any other stops the run.
	Build         func(ctx context.Context, e *env.Env, rev string) (*env.Env, error)
	TimeoutFactor float64
	Exclude       *Exclusions
	// Shard takes the commits whose full hash falls in it (default all).
	Shard    shard.Shard
	Progress io.Writer
}

// kindNotFix rejects a commit the fix classifier does not call a fix.
const kindNotFix = "not a fix"

// CommitDecision is what became of one commit.
type CommitDecision struct {
	Key        string  `json:"key"` // the commit
	Parent     string  `json:"parent,omitempty"`
	ParentEnv  string  `json:"parent_env,omitempty"`
	InstanceID string  `json:"instance_id,omitempty"`
	Kind       string  `json:"kind"` // verified, or why not
	Reason     string  `json:"reason,omitempty"`
	Seconds    float64 `json:"seconds"`
	// FixClass is the fix classifier's verdict, once the tests have run.
	FixClass *task.FixClass `json:"fix_class,omitempty"`
	// Statement says what became of each statement the model wrote.
	Statement []string `json:"statement,omitempty"`
}

// Commits makes issue-fix tasks from fix commits of e's history, in
// sandboxes of sbs. Each task's environment is built (opts.Build) at the
// commit's parent, from e's source repository: its layer then holds no later history (the
// fix is not in git log), and graders and agents use it as they use any
// environment, by applying test_patch and a candidate patch, with no
// checkout. The commit is split into test changes (test_patch) and the
// rest (patch); the task holds when the test changes alone make some
// tests fail (FAIL_TO_PASS) and both together make every FAIL_TO_PASS
// and PASS_TO_PASS test pass, each checked twice.
func Commits(ctx context.Context, sbs *env.Sandboxes, e *env.Env, opts CommitOptions) ([]CommitDecision, error) {
	if e.Repository.Kind != "git" {
		return nil, errkind.Errorf(errkind.Input, "environment %s was built from a plain directory: commit tasks need one built from a git repository", e.ID)
	}
	if opts.IssueText != "" && (opts.Auto || len(opts.Commits) != 1) {
		return nil, errkind.New(errkind.Input, "an issue text describes one commit: give exactly one with --commits")
	}
	if opts.Build == nil {
		return nil, errkind.New(errkind.Usage, "commit tasks: no builder for the parents' environments")
	}
	sb, err := sbs.Open(ctx, e)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	if opts.Exclude != nil {
		if err := opts.Exclude.Check(ctx, sb, e); err != nil {
			return nil, err
		}
	}
	// The layer holds the commit, not its history: that is read from the
	// source.
	hist, err := env.OpenHistory(ctx, e)
	if err != nil {
		return nil, err
	}
	defer hist.Close()
	git := func(args ...string) (string, error) { return hist.Git(ctx, gitArgs(args...)[1:]...) }
	all, err := listCommits(git, e.Commit, opts)
	if err != nil {
		return nil, err
	}
	var commits []string
	for _, c := range all {
		if opts.Shard.Has(c) {
			commits = append(commits, c)
		}
	}
	decided, err := jsonl.Keys(decisionsPath(opts.Out), jsonl.Field("key"))
	if err != nil {
		return nil, fmt.Errorf("read earlier decisions: %w", err)
	}
	have, err := task.Written(opts.Out)
	if err != nil {
		return nil, fmt.Errorf("read earlier tasks: %w", err)
	}
	dec, err := jsonl.Append(decisionsPath(opts.Out))
	if err != nil {
		return nil, fmt.Errorf("open decisions: %w", err)
	}
	defer dec.Close()

	// One commit after another, resumed by the decisions (a commit's task
	// line does not name it), a line each on Progress instead of a bar,
	// until Max tasks are written.
	key := func(c string) string { return c }
	plan := batch.NewPlan(commits, key, opts.Shard, decided, batch.InOrder)
	written := len(have)
	var results []CommitDecision
	_, err = batch.RunStage(ctx, batch.Job[string, commitResult]{Stage: &CommitsStage, Items: commits, Plan: &plan,
		Key: key, Out: opts.Out, Shard: opts.Shard,
		Admit: func(string, int) batch.Admission {
			if opts.Max > 0 && written >= opts.Max {
				return batch.Stop
			}
			return batch.Take
		},
		Do: func(ctx context.Context, _ int, c string) (commitResult, error) {
			d, t, err := commitTask(ctx, sbs, git, e, c, opts)
			return commitResult{d, t}, err
		},
		Write: func(out *jsonl.Writer, c string, r commitResult, err error) (string, error) {
			if err != nil {
				return "", fmt.Errorf("commit %.12s: %w", c, err)
			}
			if r.task != nil {
				if err := out.Write(r.task); err != nil {
					return "", fmt.Errorf("write task: %w", err)
				}
				written++
			}
			if err := dec.Write(r.decision); err != nil {
				return "", fmt.Errorf("write decision: %w", err)
			}
			if opts.Progress != nil {
				line := fmt.Sprintf("commit %.12s: %s", c, r.decision.Kind)
				if r.decision.Reason != "" {
					line += ": " + r.decision.Reason
				}
				fmt.Fprintln(opts.Progress, line)
			}
			results = append(results, r.decision)
			return "", nil
		},
		Finished: func(batch.Plan[string]) int { return len(results) },
	})
	return results, err
}

// commitResult is what became of a commit: its decision, and its task
// when it holds.
type commitResult struct {
	decision CommitDecision
	task     *task.Task
}

// listCommits resolves the requested commits, or with Auto lists every
// non-merge commit that changes a test file and a source file, newest
// first.
func listCommits(git func(args ...string) (string, error), head string, opts CommitOptions) ([]string, error) {
	if !opts.Auto {
		var out []string
		for _, rev := range opts.Commits {
			// HEAD is the environment's commit, as in its layer.
			if rest, ok := strings.CutPrefix(rev, "HEAD"); ok {
				rev = head + rest
			}
			sha, err := git("rev-parse", "--verify", "--end-of-options", rev+"^{commit}")
			if err == nil {
				sha = strings.TrimSpace(sha)
				_, err = git("merge-base", "--is-ancestor", sha, head)
			}
			if err != nil {
				return nil, fmt.Errorf("commit %q is not in the environment's history: %w", rev, err)
			}
			out = append(out, sha)
		}
		return out, nil
	}
	log, err := git("log", "--no-merges", "--no-renames", "--name-only", "--format=%x01%H %P", head)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	var out []string
	for _, block := range strings.Split(log, "\x01")[1:] {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		head := strings.Fields(lines[0])
		if len(head) < 2 {
			continue // a root commit: no parent to build
		}
		tests, source := false, false
		for _, f := range lines[1:] {
			f = strings.TrimSpace(f)
			switch {
			case f == "":
			case isTestFile(f):
				tests = true
			case strings.HasSuffix(f, ".py"):
				source = true
			}
		}
		if tests && source {
			out = append(out, head[0])
		}
	}
	return out, nil
}

// commitTask decides one commit. git runs git in e's history.
func commitTask(ctx context.Context, sbs *env.Sandboxes, git func(args ...string) (string, error), e *env.Env, c string, opts CommitOptions) (CommitDecision, *task.Task, error) {
	start := time.Now()
	d := CommitDecision{Key: c}
	reject := func(kind, reason string) (CommitDecision, *task.Task, error) {
		d.Kind, d.Reason, d.Seconds = kind, reason, roundSecs(time.Since(start))
		return d, nil, nil
	}
	parent, err := git("rev-parse", "--verify", c+"^1")
	if err != nil {
		return reject("no parent", "a root commit has no parent to check out")
	}
	d.Parent = strings.TrimSpace(parent)
	names, err := git("diff", "--name-only", "--no-renames", d.Parent, c)
	if err != nil {
		return d, nil, err
	}
	var testFiles, srcFiles []string
	for _, f := range strings.Fields(names) {
		if isTestFile(f) {
			testFiles = append(testFiles, f)
		} else {
			srcFiles = append(srcFiles, f)
		}
	}
	switch {
	case len(testFiles) == 0:
		return reject("no test changes", "the commit changes no test file, so nothing shows the bug")
	case len(srcFiles) == 0:
		return reject("no source changes", "the commit changes only tests")
	}
	patchOf := func(files []string) (string, error) {
		args := append([]string{"diff", "--binary", "--no-renames", "--no-ext-diff", "--no-textconv",
			"--src-prefix=a/", "--dst-prefix=b/", d.Parent, c, "--"}, files...)
		return git(args...)
	}
	testPatch, err := patchOf(testFiles)
	if err != nil {
		return d, nil, err
	}
	fix, err := patchOf(srcFiles)
	if err != nil {
		return d, nil, err
	}
	message, err := git("log", "-1", "--format=%B", c)
	if err != nil {
		return d, nil, err
	}
	statement, source := opts.IssueText, "issue text"
	if statement == "" {
		statement, source = message, "commit message"
	}
	date, err := git("log", "-1", "--format=%cI", c)
	if err != nil {
		return d, nil, err
	}
	if when, err := time.Parse(time.RFC3339, strings.TrimSpace(date)); err == nil {
		date = when.UTC().Format(time.RFC3339) // SWE-bench writes UTC with Z
	}

	penv, err := opts.Build(ctx, e, d.Parent)
	if err != nil {
		if errkind.Of(err) == errkind.Input {
			return reject("parent environment", err.Error())
		}
		return d, nil, fmt.Errorf("build the environment at %.12s: %w", d.Parent, err)
	}
	d.ParentEnv = penv.ID
	if !penv.Usable {
		return reject("parent environment", "the environment at the parent is not usable: "+penv.Reason)
	}
	repo := RepoName(e)
	t := &task.Task{
		InstanceID: instanceID(repo, "commit", c[:12]), Repo: repo, BaseCommit: penv.Commit,
		Patch: fix, TestPatch: testPatch, ProblemStatement: strings.TrimSpace(statement) + "\n",
		Version: penv.ID, CreatedAt: strings.TrimSpace(date), EnvironmentSetupCommit: penv.Commit,
		EnvID: penv.ID, Kind: "commit", StatementSource: source,
	}
	psb, err := sbs.Open(ctx, penv)
	if err != nil {
		return d, nil, err
	}
	defer psb.Close()
	v := newVerifier(penv, newBudget(penv, opts.TimeoutFactor), false)
	flaky := map[string]bool{}
	for _, b := range penv.Baseline {
		if b.Status == env.Flaky {
			flaky[b.ID] = true
		}
	}
	// Whole-suite runs with the test changes alone, then with the fix.
	var before, after []map[string]testrun.Test
	tests := 0
	for i := 0; i < 4; i++ {
		materialize := v.buggy
		if i >= 2 {
			materialize = v.goldTree
		}
		if err := materialize(ctx, psb, t); err != nil {
			var pe *patchError
			if errors.As(err, &pe) {
				return reject("patch", pe.Error())
			}
			return d, nil, err
		}
		limit := v.budget.timeout(nil)
		rep, err := runTests(ctx, psb, penv, nil, limit)
		if err != nil {
			return d, nil, err
		}
		tests += len(rep.Tests)
		if why := stopped(rep, limit); why != "" {
			kind := kindLimit
			if rep.Result.Reason == sandbox.ReasonTimeout {
				kind = kindHang
			}
			return reject(kind, why)
		}
		if i < 2 {
			before = append(before, outcomes(rep))
		} else {
			after = append(after, outcomes(rep))
		}
	}
	var changed, passBefore, failAfter []string
	for id := range after[0] {
		if flaky[id] {
			continue
		}
		inChanged := false
		for _, f := range testFiles {
			if strings.HasPrefix(id, f+"::") || id == f {
				inChanged = true
			}
		}
		allFail := failed(before[0][id].Outcome) && failed(before[1][id].Outcome)
		allPass := before[0][id].Outcome == testrun.Pass && before[1][id].Outcome == testrun.Pass
		fixed := after[0][id].Outcome == testrun.Pass && after[1][id].Outcome == testrun.Pass
		switch {
		case allFail && fixed:
			t.FailToPass = append(t.FailToPass, id)
		case allPass && fixed:
			t.PassToPass = append(t.PassToPass, id)
		}
		if inChanged {
			changed = append(changed, id)
			if allPass {
				passBefore = append(passBefore, id)
			}
			if !fixed {
				failAfter = append(failAfter, id)
			}
		}
	}
	sort.Strings(t.FailToPass)
	sort.Strings(t.PassToPass)
	if len(t.FailToPass) == 0 {
		switch {
		case len(changed) > 0 && len(passBefore) == len(changed):
			return reject("tests pass without the fix", fmt.Sprintf("the commit's tests already pass without the fix (%d tests of %s pass with the test changes alone)", len(changed), strings.Join(testFiles, ", ")))
		case len(failAfter) > 0:
			return reject("tests fail with the fix", fmt.Sprintf("%d of the commit's tests still fail with the fix, e.g. %s", len(failAfter), failAfter[0]))
		default:
			return reject("no FAIL_TO_PASS", "no test fails with the test changes alone and passes with the fix")
		}
	}
	t.FixClass = classifyFix(message, fix, t.FailToPass, before[0])
	if opts.Model != nil {
		v, note := modelVerdict(ctx, opts.Model, message, fix, t.FailToPass, before[0])
		applyModelVerdict(t.FixClass, opts.ModelName, v, note)
	}
	d.FixClass = t.FixClass
	if opts.Auto && !opts.KeepAll && !t.FixClass.Fix {
		return reject(kindNotFix, "the fix classifier scores it "+fmt.Sprint(t.FixClass.Score)+": "+strings.Join(t.FixClass.Reasons, "; "))
	}
	if opts.Model != nil && opts.IssueText == "" {
		text, notes := modelStatement(ctx, opts.Model, t.FailToPass, before[0], testPatch, fix)
		d.Statement = notes
		if text != "" {
			t.ProblemStatement, t.StatementSource = text+"\n", "model "+opts.ModelName
		}
	}
	d.Kind, d.InstanceID = kindVerified, t.InstanceID
	d.Seconds = roundSecs(time.Since(start))
	t.Validation = &task.Validation{TestsRun: tests, Seconds: d.Seconds, Checks: []string{
		fmt.Sprintf("environment built at the parent %.12s (%s)", d.Parent, penv.ID),
		fmt.Sprintf("test_patch alone: all %d FAIL_TO_PASS tests fail (whole suite, runs 1 and 2)", len(t.FailToPass)),
		fmt.Sprintf("test_patch and patch: all %d FAIL_TO_PASS and %d PASS_TO_PASS tests pass (whole suite, runs 1 and 2)", len(t.FailToPass), len(t.PassToPass)),
	}}
	return d, t, nil
}
