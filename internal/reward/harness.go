package reward

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cwm/internal/env"
	"cwm/internal/logparse"
	"cwm/internal/sandbox"
	"cwm/internal/task"
	"cwm/internal/testrun"
)

// SWE-bench's markers around the test output, which its get_logs_eval
// reads between; the harness script prints them too.
const (
	startMarker = ">>>>> Start Test Output"
	endMarker   = ">>>>> End Test Output"
)

// HarnessRun is one run of an imported task's tests by its dataset's
// harness (Harness).
type HarnessRun struct {
	// Status is each test's status as the task's log parser reads the
	// test output (logparse's PASSED, FAILED, ...).
	Status map[string]string
	// Problem says why the run could not grade: a patch that does not
	// apply, a repository that is not there, tests that were stopped.
	// Status is empty then.
	Problem string
	// PatchFailed says the problem is the candidate's: it does not apply
	// at base_commit. Any other problem is the task's or its image's.
	PatchFailed bool
	// Stopped says the tests were stopped by a limit (Problem says which).
	Stopped bool
	Log     string
}

// HarnessScript makes the tree the candidate's at base_commit and runs the
// tests (exported for the import's benchmark, which runs it under runc). Its arguments: workdir, base_commit, own (1: the test command is
// the row's eval script), hidden tests, then the test files. The patches
// and the test command are files /tmp/cwm-import-*. Exit 20-24 say which
// step failed.
const HarnessScript = `set -uo pipefail
wd=$1 base=$2 own=$3 hidden=$4; shift 4
cd "$wd" 2>/dev/null || { echo "cwm: the image has no $wd" >&2; exit 20; }
git config --global --add safe.directory '*' 2>/dev/null
git rev-parse -q --verify HEAD >/dev/null || { echo "cwm: $wd is not a git repository" >&2; exit 20; }
if [ "$(git rev-parse HEAD)" != "$(git rev-parse -q --verify "$base^{commit}")" ]; then
  git checkout -q -f "$base" 2>&1 || { echo "cwm: base_commit $base is not in the image's repository" >&2; exit 21; }
fi
p=/tmp/cwm-import-
if [ -s ${p}bug.diff ]; then git apply --whitespace=nowarn ${p}bug.diff 2>&1 || { echo "cwm: the bug patch does not apply at base_commit" >&2; exit 22; }; fi
if [ -s ${p}candidate.diff ]; then git apply --whitespace=nowarn ${p}candidate.diff 2>&1 || { echo ">>>>> Patch Apply Failed"; echo "cwm: the patch does not apply at base_commit" >&2; exit 23; }; fi
if [ "$own" = 1 ]; then exec bash ${p}test.sh; fi
for f in "$@"; do
  if git cat-file -e "$base:$f" 2>/dev/null; then git checkout -q "$base" -- "$f"; else rm -f -- "$f"; fi
done
if [ -s ${p}test.diff ]; then git apply --whitespace=nowarn ${p}test.diff 2>&1 || { echo "cwm: the test patch does not apply at base_commit" >&2; exit 24; }; fi
if [ -n "$hidden" ]; then rm -rf "./$(basename "$hidden")" && cp -a "$hidden" "./$(basename "$hidden")"; fi
echo '>>>>> Start Test Output'
bash ${p}test.sh
echo ">>>>> Test Exit Code: $?"
echo '>>>>> End Test Output'
`

// Harness runs an imported task's tests as its dataset's harness does, in
// a fresh sandbox of e (the environment of the task's image): the tree at
// base_commit, the bug patch (SWE-smith) and the candidate applied with
// git apply, the test files restored and the test patch applied again,
// the hidden tests copied in (unless the row's own eval script does
// that), the test command run and its output read by the task's log
// parser. It is the one place that knows how an imported task is graded:
// cwm tasks import validates with it, and Grade grades with it.
func Harness(ctx context.Context, sbs *env.Sandboxes, e *env.Env, t *task.Task, candidate string) (*HarnessRun, error) {
	sb, err := sbs.Open(ctx, e)
	if err != nil {
		return nil, fmt.Errorf("grade %s: %w", t.InstanceID, err)
	}
	defer sb.Close()
	return HarnessIn(ctx, sb, t, candidate)
}

// HarnessIn is Harness in a sandbox the caller started (fresh, on the
// task's environment): for tasks whose sandboxes need more than the
// environment gives (cwm tasks import --native adds history to reach an
// old base_commit).
func HarnessIn(ctx context.Context, sb *sandbox.Sandbox, t *task.Task, candidate string) (*HarnessRun, error) {
	imp := t.Imported
	p, err := logparse.Get(imp.LogParser)
	if err != nil {
		return nil, fmt.Errorf("grade %s: %w", t.InstanceID, err)
	}
	files := map[string]string{"bug.diff": t.BugPatch, "candidate.diff": candidate, "test.diff": t.TestPatch, "test.sh": imp.TestCommand + "\n"}
	for name, text := range files {
		if err := sb.WriteFile(ctx, "/tmp/cwm-import-"+name, []byte(text), 0o644); err != nil {
			return nil, fmt.Errorf("write %s for %s: %w", name, t.InstanceID, err)
		}
	}
	own := "0"
	if imp.OwnScript {
		own = "1"
	}
	args := append([]string{"bash", "-c", HarnessScript, "grade", imp.Workdir, t.BaseCommit, own, imp.HiddenTests}, imp.TestFiles...)
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: args, Capture: 16 << 20})
	if err != nil {
		return nil, fmt.Errorf("grade %s: %w", t.InstanceID, err)
	}
	out := string(res.Stdout) + string(res.Stderr)
	run := &HarnessRun{Log: out}
	if why := lastLine(res.Stderr); res.ExitCode >= 20 && res.ExitCode <= 24 && strings.HasPrefix(why, "cwm: ") {
		run.Problem, run.PatchFailed = strings.TrimPrefix(why, "cwm: "), res.ExitCode == 23
		return run, nil
	}
	if res.Reason != sandbox.ReasonNone {
		run.Problem, run.Stopped = fmt.Sprintf("the tests were stopped (%s)", res.Reason), true
		return run, nil
	}
	run.Status = parseLog(p, out)
	return run, nil
}

// parseLog reads the statuses between the markers, or in the whole log
// when there are none there (swebench's get_logs_eval does the same).
func parseLog(p logparse.Parser, log string) map[string]string {
	if _, after, ok := strings.Cut(log, startMarker); ok {
		inner, _, _ := strings.Cut(after, endMarker)
		if m := p(inner); len(m) > 0 {
			return m
		}
	}
	return p(log)
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// outcomeOf maps a log parser's status to a test outcome: XFAIL passes,
// as SWE-bench's test_passed has it.
var outcomeOf = map[string]testrun.Outcome{logparse.Passed: testrun.Pass, logparse.XFail: testrun.Pass,
	logparse.Failed: testrun.Fail, logparse.Error: testrun.Error, logparse.Skipped: testrun.Skip}

// gradeImported is Grade's part for an imported task (patch not empty):
// the dataset's harness runs the tests, and their statuses are judged as
// a native task's outcomes are.
func gradeImported(ctx context.Context, sbs *env.Sandboxes, e *env.Env, t *task.Task, patch string, r Result) (Result, error) {
	start := time.Now()
	run, err := Harness(ctx, sbs, e, t, patch)
	if err != nil {
		return r, err
	}
	r.Seconds.Tests = time.Since(start).Seconds()
	switch {
	case run.PatchFailed:
		r.Apply, r.ApplyLog, r.Reason = ApplyFailed, capText(run.Log), "the patch does not apply"
		return r, nil
	case run.Problem != "" && !run.Stopped:
		return r, fmt.Errorf("grade %s: %w: %s", t.InstanceID, ErrTask, run.Problem)
	}
	r.Apply, r.TestNote = ApplyGit, run.Problem
	ran := make([]testrun.Test, 0, len(run.Status))
	for id, st := range run.Status {
		o, ok := outcomeOf[st]
		if !ok {
			o = testrun.Fail
		}
		ran = append(ran, testrun.Test{ID: id, Outcome: o})
	}
	r.Tests, r.Resolved, r.Reason = judge(t, ran)
	return r, nil
}
