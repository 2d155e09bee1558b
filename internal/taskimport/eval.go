package taskimport

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cwm/internal/base"
	"cwm/internal/logparse"
	"cwm/internal/sandbox"
	"cwm/internal/task"
)

// SWE-bench's markers around the test output, which its get_logs_eval
// reads between; cwm's script prints them too.
const (
	startMarker = ">>>>> Start Test Output"
	endMarker   = ">>>>> End Test Output"
)

// runTimeout bounds one grading run (the test command's share of it is
// what a dataset's slowest suites need).
const runTimeout = 30 * time.Minute

// run is one grading run of a task with a candidate patch.
type run struct {
	// status is each test's status, as the task's log parser reads the
	// test output.
	status map[string]string
	// problem says why the run could not grade: a patch that does not
	// apply, a repository that is not there.
	problem string
	log     string
}

// Sandboxes start the sandboxes tasks are graded in: one per run, on the
// task's base, with the image's Env, the dataset's PATH additions first,
// in the repository's directory.
type Sandboxes struct {
	Runtime *sandbox.Runtime
	Store   *base.Store
	// Open, when set, starts a task's sandboxes instead: for tasks on an
	// environment cwm built (--native) rather than on an image.
	Open func(ctx context.Context, t *task.Task) (*sandbox.Sandbox, error)
}

func (s Sandboxes) open(ctx context.Context, t *task.Task) (*sandbox.Sandbox, error) {
	if s.Open != nil {
		return s.Open(ctx, t)
	}
	imp := t.Imported
	b := s.Store.Get(imp.Base)
	if b == nil {
		return nil, fmt.Errorf("task %s: base %s is not in %s", t.InstanceID, base.ShortDigest(imp.Base), s.Store.Dir())
	}
	var over []string
	if len(imp.Path) > 0 {
		over = []string{"PATH=" + strings.Join(imp.Path, ":")}
	}
	cfg := sandbox.Config{Base: b.Rootfs(), Env: b.SandboxEnv(over), Workdir: "/",
		Limits: sandbox.Limits{Timeout: runTimeout}}
	sb, err := s.Runtime.New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("start a sandbox on %s for %s: %w", b.Short(), t.InstanceID, err)
	}
	return sb, nil
}

// gradeScript makes the tree the candidate's at base_commit and runs the
// tests. Its arguments: workdir, base_commit, own (1: the test command is
// the row's eval script), hidden tests, then the test files. The patches
// and the test command are files /tmp/cwm-import-*. Exit 20-24 say which step failed.
const gradeScript = `set -uo pipefail
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

// grade runs t's tests on its tree at base_commit with candidate applied
// (and the bug patch first, for datasets whose image holds the clean
// tree), in a fresh sandbox.
func (s Sandboxes) grade(ctx context.Context, t *task.Task, candidate string) (*run, error) {
	sb, err := s.open(ctx, t)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	imp := t.Imported
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
	args := append([]string{"bash", "-c", gradeScript, "grade", imp.Workdir, t.BaseCommit, own, imp.HiddenTests}, imp.TestFiles...)
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: args, Capture: 16 << 20})
	if err != nil {
		return nil, fmt.Errorf("grade %s: %w", t.InstanceID, err)
	}
	out := string(res.Stdout) + string(res.Stderr)
	if why := lastLine(string(res.Stderr)); res.ExitCode >= 20 && res.ExitCode <= 24 && strings.HasPrefix(why, "cwm: ") {
		return &run{problem: strings.TrimPrefix(why, "cwm: "), log: out}, nil
	}
	if res.Reason != sandbox.ReasonNone {
		return &run{problem: fmt.Sprintf("the tests were stopped (%s)", res.Reason), log: out}, nil
	}
	p, err := logparse.Get(imp.LogParser)
	if err != nil {
		return nil, err
	}
	return &run{status: parse(p, out), log: out}, nil
}

// parse reads the statuses between the markers, or in the whole log
// when there are none there (swebench's get_logs_eval does the same).
func parse(p logparse.Parser, log string) map[string]string {
	if _, after, ok := strings.Cut(log, startMarker); ok {
		inner, _, _ := strings.Cut(after, endMarker)
		if m := p(inner); len(m) > 0 {
			return m
		}
	}
	return p(log)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// inspectScript prints the repository's HEAD and, given a bug patch, the
// fix: its reverse, as git writes it once the bug is in the tree.
const inspectScript = `set -uo pipefail
cd "$1" 2>/dev/null || { echo "cwm: the image has no $1" >&2; exit 20; }
git config --global --add safe.directory '*' 2>/dev/null
git rev-parse -q --verify HEAD || { echo "cwm: $1 is not a git repository" >&2; exit 20; }
if [ -s /tmp/cwm-import-bug.diff ]; then
  git apply --whitespace=nowarn /tmp/cwm-import-bug.diff 2>&1 >&2 || { echo "cwm: the bug patch does not apply to the image's tree" >&2; exit 22; }
  git diff -R
fi
`

// inspect fills in what the image knows and the row did not say: the
// base commit (the repository's HEAD) and, for a dataset whose patch
// makes the bug, the gold fix. A problem is returned as a reason.
func (s Sandboxes) inspect(ctx context.Context, t *task.Task) (string, error) {
	if t.BaseCommit != "" && t.BugPatch == "" {
		return "", nil
	}
	sb, err := s.open(ctx, t)
	if err != nil {
		return "", err
	}
	defer sb.Close()
	if err := sb.WriteFile(ctx, "/tmp/cwm-import-bug.diff", []byte(t.BugPatch), 0o644); err != nil {
		return "", fmt.Errorf("write the bug patch of %s: %w", t.InstanceID, err)
	}
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"bash", "-c", inspectScript, "inspect", t.Imported.Workdir}, Capture: 16 << 20})
	if err != nil {
		return "", fmt.Errorf("inspect the image of %s: %w", t.InstanceID, err)
	}
	if !res.Success() {
		return strings.TrimPrefix(lastLine(string(res.Stderr)), "cwm: "), nil
	}
	head, fix, _ := strings.Cut(string(res.Stdout), "\n")
	if t.BaseCommit == "" {
		t.BaseCommit = strings.TrimSpace(head)
	}
	if t.BugPatch != "" {
		if strings.TrimSpace(fix) == "" {
			return "the bug patch changes nothing", nil
		}
		t.Patch = fix
	}
	return "", nil
}
