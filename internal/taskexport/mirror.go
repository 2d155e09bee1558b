package taskexport

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"cwm/internal/env"
	"cwm/internal/layertar"
	"cwm/internal/sandbox"
	"cwm/internal/task"
)

// mirrorName is the bare mirror's directory in the sandbox's /tmp.
const mirrorName = "cwm-mirror.git"

// mirrorScript clones the environment's repository bare into /tmp and,
// for each ID=PATCH_FILE=DATE argument, commits the patch on top of the
// environment's commit ($1) as branch ID (without a work tree: a scratch
// index, git apply --cached, write-tree, commit-tree), printing "ID
// COMMIT". A task without a patch file gets a branch at the commit itself.
// Commits have a fixed author and the task's date, so the same tasks give
// the same hashes.
const mirrorScript = `set -euo pipefail
base=$1; shift
rm -rf /tmp/` + mirrorName + `
git clone -q --bare --no-local /repo /tmp/` + mirrorName + `
cd /tmp/` + mirrorName + `
export GIT_INDEX_FILE=/tmp/cwm-mirror-index
export GIT_AUTHOR_NAME=cwm GIT_AUTHOR_EMAIL=cwm@localhost GIT_COMMITTER_NAME=cwm GIT_COMMITTER_EMAIL=cwm@localhost
for a in "$@"; do
  id=${a%%=*}; rest=${a#*=}; patch=${rest%%=*}; date=${rest#*=}
  c=$base
  if [ -n "$patch" ]; then
    git read-tree "$base"
    git apply --cached --whitespace=nowarn "$patch"
    tree=$(git write-tree)
    c=$(GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date git commit-tree "$tree" -p "$base" -m "$id: the bug of the task")
  fi
  git update-ref "refs/heads/$id" "$c"
  echo "$id $c"
done
rm -f "$GIT_INDEX_FILE"`

// writeMirror writes dir, a bare mirror of e's repository holding, for
// every task of ts (all on e), a branch named for its instance id at the
// commit that contains its bug: for a mutate-fix task the environment's
// commit with bug_patch applied, for an issue-fix task the environment's
// commit (the fix's parent). It returns each task's commit by instance id.
func writeMirror(ctx context.Context, sbs *env.Sandboxes, e *env.Env, ts []*task.Task, dir string) (map[string]string, error) {
	sb, err := sbs.Open(ctx, e)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	args := []string{"bash", "-c", mirrorScript, "mirror", e.Commit}
	for i, t := range ts {
		f := ""
		if t.BugPatch != "" {
			f = fmt.Sprintf("/tmp/cwm-bug-%d.patch", i)
			if err := sb.WriteFile(ctx, f, []byte(t.BugPatch), 0o644); err != nil {
				return nil, fmt.Errorf("write the bug patch of %s: %w", t.InstanceID, err)
			}
		}
		args = append(args, t.InstanceID+"="+f+"="+commitDate(t.CreatedAt))
	}
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: args, Dir: env.RepoRoot, Timeout: 10 * time.Minute})
	if err != nil {
		return nil, fmt.Errorf("commit the bugs of %s: %w", e.ID, err)
	}
	if !res.Success() {
		return nil, fmt.Errorf("commit the bugs of %s: %s: %s", e.ID, res.Describe(), strings.TrimSpace(string(res.Stderr)))
	}
	commits := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		if id, c, ok := strings.Cut(line, " "); ok {
			commits[id] = c
		}
	}
	for _, t := range ts {
		if commits[t.InstanceID] == "" {
			return nil, fmt.Errorf("commit the bugs of %s: no commit for %s", e.ID, t.InstanceID)
		}
	}
	if err := copyOut(ctx, sb, "/tmp/"+mirrorName, dir); err != nil {
		return nil, fmt.Errorf("copy the mirror of %s out: %w", e.ID, err)
	}
	return commits, nil
}

// copyOut copies the sandbox's directory src to the host's dst (which must
// not exist) as a tar, unpacked by layertar: nothing the sandbox wrote can
// land outside dst.
func copyOut(ctx context.Context, sb *sandbox.Sandbox, src, dst string) error {
	parent := filepath.Dir(dst)
	tmp, err := os.MkdirTemp(parent, ".copy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tarFile, err := os.Create(filepath.Join(tmp, "out.tar"))
	if err != nil {
		return err
	}
	defer tarFile.Close()
	top := filepath.Base(src)
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"tar", "-C", filepath.Dir(src), "-cf", "-", top},
		Stdout: tarFile, Capture: 64 << 10, OutputLimit: -1, Timeout: 10 * time.Minute})
	if err != nil {
		return err
	}
	if !res.Success() {
		return fmt.Errorf("tar: %s: %s", res.Describe(), strings.TrimSpace(string(res.Stderr)))
	}
	if _, err := tarFile.Seek(0, 0); err != nil {
		return err
	}
	into := filepath.Join(tmp, "into")
	if err := os.Mkdir(into, 0o755); err != nil {
		return err
	}
	u, err := layertar.New(into, layertar.Options{})
	if err != nil {
		return err
	}
	defer u.Close()
	if err := u.Layer(tarFile, layertar.Layer{Name: src, Top: top, Size: -1}); err != nil {
		return err
	}
	if err := u.Finish(); err != nil {
		return err
	}
	return os.Rename(filepath.Join(into, top), dst)
}

// commitDate is the date a task's commit carries: its created_at, or a
// fixed one when it has none git reads.
func commitDate(createdAt string) string {
	if _, err := time.Parse(time.RFC3339, createdAt); err == nil {
		return createdAt
	}
	return "2000-01-01T00:00:00Z"
}
