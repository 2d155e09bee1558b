package tasks

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"cwm/internal/env"
	"cwm/internal/sandbox"
	"cwm/internal/task"
	"cwm/internal/testrun"
)

// verifier checks that a task holds on its environment: the buggy tree
// (bug_patch and test_patch applied) fails every FAIL_TO_PASS test, and
// the gold tree (patch applied on top) passes every FAIL_TO_PASS and
// PASS_TO_PASS test.
//
// Whole-suite runs of a gold tree are shared between the tasks whose gold
// trees are identical (the same git tree hash, computed in the sandbox
// after applying the patches): for mutate-fix tasks that is always the
// environment's own tree, so one pair of whole-suite runs serves every
// task of a session instead of two per task. With shareGold false every
// gold check runs the whole suite itself.
type verifier struct {
	env       *env.Env
	budget    budget
	shareGold bool

	mu   sync.Mutex           // guards gold
	gold map[string]*goldRuns // by tree hash
}

// goldRuns are whole-suite runs of one tree; ready is closed once reps
// (or err) are set.
type goldRuns struct {
	ready chan struct{}
	reps  []*testrun.Report
	err   error
}

func newVerifier(e *env.Env, b budget, shareGold bool) *verifier {
	return &verifier{env: e, budget: b, shareGold: shareGold, gold: map[string]*goldRuns{}}
}

// verdict is the outcome of checks on one task: the checks that passed,
// and the first that did not (problem), if any.
type verdict struct {
	checks   []string
	problem  string
	testsRun int
}

func (v *verdict) fail(format string, args ...any) { v.problem = fmt.Sprintf(format, args...) }

// buggy makes sb's tree the task's buggy tree.
func (v *verifier) buggy(ctx context.Context, sb *sandbox.Sandbox, t *task.Task) error {
	if err := sb.Reset(ctx); err != nil {
		return fmt.Errorf("reset sandbox: %w", err)
	}
	if err := applyPatch(ctx, sb, "bug_patch", t.BugPatch); err != nil {
		return err
	}
	return applyPatch(ctx, sb, "test_patch", t.TestPatch)
}

// goldTree makes sb's tree the task's gold tree.
func (v *verifier) goldTree(ctx context.Context, sb *sandbox.Sandbox, t *task.Task) error {
	if err := v.buggy(ctx, sb, t); err != nil {
		return err
	}
	return applyPatch(ctx, sb, "patch", t.Patch)
}

// goldHash makes sb's tree the task's gold tree, as goldTree does, and
// returns its git tree hash and HEAD's, all in one command: this runs
// once per task.
func (v *verifier) goldHash(ctx context.Context, sb *sandbox.Sandbox, t *task.Task) (tree, head string, err error) {
	if err := sb.Reset(ctx); err != nil {
		return "", "", fmt.Errorf("reset sandbox: %w", err)
	}
	args := []string{"bash", "-c", goldHashScript, "gold"}
	var py []string
	for _, p := range []struct{ name, text string }{{"bug_patch", t.BugPatch}, {"test_patch", t.TestPatch}, {"patch", t.Patch}} {
		if p.text == "" {
			continue
		}
		f := "/tmp/cwm-" + p.name + ".patch"
		if err := sb.WriteFile(ctx, f, []byte(p.text), 0o644); err != nil {
			return "", "", fmt.Errorf("write %s: %w", p.name, err)
		}
		args = append(args, p.name+"="+f)
		py = append(py, patchedPython(p.text)...)
	}
	args = append(append(args, "--"), py...)
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: args, Dir: "/repo", Timeout: 5 * time.Minute})
	if err != nil {
		return "", "", fmt.Errorf("make the gold tree: %w", err)
	}
	if res.ExitCode == 3 {
		name, msg, _ := strings.Cut(lastLine(res.Stderr), ": ")
		return "", "", &patchError{name: name, msg: msg}
	}
	f := strings.Fields(string(res.Stdout))
	if !res.Success() || len(f) != 2 {
		return "", "", fmt.Errorf("make the gold tree: %s: %s", res.Describe(), lastLine(res.Stderr))
	}
	return f[0], f[1], nil
}

// goldHashScript takes NAME=FILE patches, "--", then the Python files they
// touch (whose bytecode goes).
const goldHashScript = `for a in "$@"; do
  shift
  [ "$a" = -- ] && break
  err=$(git -c core.quotepath=false apply --whitespace=nowarn "${a#*=}" 2>&1) || { echo "${a%%=*}: $(echo "$err" | tail -n 1)" >&2; exit 3; }
done
for f in "$@"; do rm -f -- "$(dirname -- "$f")/__pycache__/$(basename -- "$f" .py)".*.pyc; done
git add -A . && git write-tree && git rev-parse 'HEAD^{tree}'`

// checkBug runs FAIL_TO_PASS (the whole suite when whole is set) on the
// buggy tree; every FAIL_TO_PASS test must fail or error.
func (v *verifier) checkBug(ctx context.Context, sb *sandbox.Sandbox, t *task.Task, run int, whole bool, out *verdict) error {
	if err := v.buggy(ctx, sb, t); err != nil {
		var pe *patchError
		if errors.As(err, &pe) {
			out.fail("%v", pe)
			return nil
		}
		return err
	}
	ids := t.FailToPass
	if whole {
		ids = nil
	}
	timeout := v.budget.timeout(ids)
	rep, err := runTests(ctx, sb, v.env, ids, timeout)
	if err != nil {
		return err
	}
	out.testsRun += len(rep.Tests)
	if why := stopped(rep, timeout); why != "" {
		out.fail("buggy tree, run %d: %s", run, why)
		return nil
	}
	got := outcomes(rep)
	for _, id := range t.FailToPass {
		o, ok := got[id]
		switch {
		case !ok:
			out.fail("FAIL_TO_PASS test %s did not run on the buggy tree (run %d)", id, run)
			return nil
		case !failed(o.Outcome):
			out.fail("FAIL_TO_PASS test %s does not fail on the buggy tree (run %d: %s)", id, run, o.Outcome)
			return nil
		}
	}
	what := "FAIL_TO_PASS"
	if whole {
		what = "the whole suite"
	}
	out.checks = append(out.checks, fmt.Sprintf("buggy tree fails all %d FAIL_TO_PASS tests (run %d, %s)", len(t.FailToPass), run, what))
	return nil
}

// checkGold checks the gold tree runs times. A mutate-fix task's gold
// tree must also be exactly the environment's tree.
func (v *verifier) checkGold(ctx context.Context, sb *sandbox.Sandbox, t *task.Task, runs int, whole bool, out *verdict) error {
	tree, head, err := v.goldHash(ctx, sb, t)
	if err != nil {
		var pe *patchError
		if errors.As(err, &pe) {
			out.fail("%v", pe)
			return nil
		}
		return err
	}
	if t.Kind == "mutate" {
		if head != tree {
			out.fail("the gold patch does not restore the environment's tree (%s, want %s)", tree, head)
			return nil
		}
		out.checks = append(out.checks, "patch applies to the buggy tree with git apply and restores the environment's tree exactly")
	} else {
		out.checks = append(out.checks, "test_patch and patch apply with git apply")
	}
	want := append(append([]string{}, t.FailToPass...), t.PassToPass...)
	judge := func(rep *testrun.Report, label string) bool {
		if why := stopped(rep, v.budget.timeout(nil)); why != "" {
			out.fail("gold tree, %s: %s", label, why)
			return false
		}
		got := outcomes(rep)
		for _, id := range want {
			o, ok := got[id]
			if !ok {
				out.fail("test %s did not run on the gold tree (%s)", id, label)
				return false
			}
			if o.Outcome != testrun.Pass {
				out.fail("test %s does not pass on the gold tree (%s: %s %s)", id, label, o.Outcome, o.Message)
				return false
			}
		}
		return true
	}
	if !whole && v.shareGold {
		reps, ran, err := v.goldReports(ctx, sb, tree, runs, func(ctx context.Context) error { return v.goldTree(ctx, sb, t) })
		if err != nil {
			return err
		}
		out.testsRun += ran
		for i, rep := range reps[:runs] {
			label := fmt.Sprintf("whole-suite run %d of tree %.12s", i+1, tree)
			if !judge(rep, label) {
				return nil
			}
			out.checks = append(out.checks, fmt.Sprintf("gold tree passes FAIL_TO_PASS and PASS_TO_PASS (%s, shared by tasks with this tree)", label))
		}
		return nil
	}
	for i := 1; i <= runs; i++ {
		if i > 1 {
			if err := v.goldTree(ctx, sb, t); err != nil {
				return err
			}
		}
		ids := want
		if whole {
			ids = nil
		}
		rep, err := runTests(ctx, sb, v.env, ids, v.budget.timeout(ids))
		if err != nil {
			return err
		}
		out.testsRun += len(rep.Tests)
		label := fmt.Sprintf("run %d", i)
		if !judge(rep, label) {
			return nil
		}
		out.checks = append(out.checks, fmt.Sprintf("gold tree passes FAIL_TO_PASS and PASS_TO_PASS (%s)", label))
	}
	return nil
}

// goldReports returns n whole-suite runs of tree, running what is missing
// in sb. sb holds the tree when called; each further run starts from a
// reset and materialize (nil: the environment's own tree). Concurrent
// callers for the same tree wait for the first.
func (v *verifier) goldReports(ctx context.Context, sb *sandbox.Sandbox, tree string, n int, materialize func(context.Context) error) ([]*testrun.Report, int, error) {
	for {
		v.mu.Lock()
		g := v.gold[tree]
		if g == nil || (isDone(g.ready) && (g.err != nil || len(g.reps) < n)) {
			var prev []*testrun.Report
			if g != nil && g.err == nil {
				prev = g.reps
			}
			g = &goldRuns{ready: make(chan struct{}), reps: prev}
			v.gold[tree] = g
			v.mu.Unlock()
			tests := 0
			for runs := 0; len(g.reps) < n; runs++ {
				if runs > 0 {
					if err := sb.Reset(ctx); err != nil {
						g.err = fmt.Errorf("reset sandbox: %w", err)
						break
					}
					if materialize != nil {
						if err := materialize(ctx); err != nil {
							g.err = err
							break
						}
					}
				}
				rep, err := runTests(ctx, sb, v.env, nil, v.budget.timeout(nil))
				if err != nil {
					g.err = err
					break
				}
				tests += len(rep.Tests)
				g.reps = append(g.reps, rep)
			}
			close(g.ready)
			return g.reps, tests, g.err
		}
		v.mu.Unlock()
		select {
		case <-g.ready:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
		if g.err == nil && len(g.reps) >= n {
			return g.reps, 0, nil
		}
	}
}

// seedGold records runs of tree made elsewhere.
func (v *verifier) seedGold(tree string, reps []*testrun.Report) {
	g := &goldRuns{ready: make(chan struct{}), reps: reps}
	close(g.ready)
	v.mu.Lock()
	v.gold[tree] = g
	v.mu.Unlock()
}

func isDone(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// stableTests are the tests that may go in FAIL_TO_PASS or PASS_TO_PASS:
// passing in every baseline run (so never flaky) and in every one of reps,
// runs of the same tree made now. The others are returned as unstable.
func stableTests(e *env.Env, reps []*testrun.Report) ([]string, map[string]bool) {
	bad := map[string]bool{}
	for _, rep := range reps {
		got := outcomes(rep)
		for _, id := range e.Passing() {
			if got[id].Outcome != testrun.Pass {
				bad[id] = true
			}
		}
	}
	var stable []string
	for _, id := range e.Passing() {
		if !bad[id] {
			stable = append(stable, id)
		}
	}
	return stable, bad
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
