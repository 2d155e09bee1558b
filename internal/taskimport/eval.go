package taskimport

import (
	"context"
	"fmt"
	"strings"

	"cwm/internal/base"
	"cwm/internal/env"
	"cwm/internal/reward"
	"cwm/internal/sandbox"
	"cwm/internal/task"
	"cwm/internal/testrun"
)

// Sandboxes start the sandboxes tasks are graded in: one per run, on the
// environment recorded for the task's image (env.ImageSpec: its base, the
// dataset's PATH additions first, in the repository's directory).
type Sandboxes struct {
	Runtime *sandbox.Runtime
	// Store holds the bases images become; Envs, of the same $CWM_HOME,
	// the environments recorded for them.
	Store *base.Store
	Envs  *env.Store
	// Open, when set, starts a task's sandboxes instead: for tasks on an
	// environment cwm built (--native) rather than on an image.
	Open func(ctx context.Context, t *task.Task) (*sandbox.Sandbox, error)
}

// record stores the environment of t's image (on its base, imported) and
// names it in t.EnvID: every stage opens the task's sandboxes through it.
func (s Sandboxes) record(ctx context.Context, t *task.Task) error {
	imp := t.Imported
	b := s.Store.Get(imp.Base)
	if b == nil {
		return fmt.Errorf("task %s: base %s is not in %s", t.InstanceID, base.ShortDigest(imp.Base), s.Store.Dir())
	}
	test, err := testrun.Parse(imp.TestCommand)
	if err != nil {
		test = testrun.Command{Framework: testrun.Shell, Line: imp.TestCommand}
	}
	e, err := s.Envs.RecordImage(ctx, env.NewSandboxes(s.Runtime), b, env.ImageSpec{Ref: imp.Image, Workdir: imp.Workdir, Path: imp.Path}, test)
	if err != nil {
		return err
	}
	t.EnvID = e.ID
	return nil
}

// keep adds the PASS_TO_PASS tests of t, a task kept, to the baseline of
// its image's environment (env.Env.AddPassing).
func (s Sandboxes) keep(t *task.Task) error {
	e, err := s.env(t)
	if err != nil {
		return err
	}
	return e.AddPassing(t.PassToPass)
}

func (s Sandboxes) env(t *task.Task) (*env.Env, error) {
	e := s.Envs.Get(t.EnvID)
	if e == nil {
		return nil, fmt.Errorf("task %s: environment %s is not in %s", t.InstanceID, t.EnvID, s.Envs.Dir())
	}
	return e, nil
}

// open starts a fresh sandbox on the environment of t's image (record
// named it), in the repository's directory.
func (s Sandboxes) open(ctx context.Context, t *task.Task) (*sandbox.Sandbox, error) {
	if s.Open != nil {
		return s.Open(ctx, t)
	}
	e, err := s.env(t)
	if err != nil {
		return nil, err
	}
	sb, err := env.NewSandboxes(s.Runtime).Open(ctx, e)
	if err != nil {
		return nil, fmt.Errorf("start a sandbox for %s: %w", t.InstanceID, err)
	}
	return sb, nil
}

// grade runs t's tests with candidate applied by the dataset's harness
// (reward.Harness), in a fresh sandbox.
func (s Sandboxes) grade(ctx context.Context, t *task.Task, candidate string) (*reward.HarnessRun, error) {
	if s.Open != nil {
		sb, err := s.Open(ctx, t)
		if err != nil {
			return nil, err
		}
		defer sb.Close()
		return reward.HarnessIn(ctx, sb, t, candidate)
	}
	e, err := s.env(t)
	if err != nil {
		return nil, err
	}
	return reward.Harness(ctx, env.NewSandboxes(s.Runtime), e, t, candidate)
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
		return "", fmt.Errorf("inspect the image: %w", err)
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
