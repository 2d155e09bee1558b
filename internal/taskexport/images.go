package taskexport

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"cwm/internal/env"
	"cwm/internal/envoci"
	"cwm/internal/errkind"
	"cwm/internal/sandbox"
	"cwm/internal/task"
)

// ImagesDir holds an export's images: one OCI image layout per
// environment (images/ENV), tagged "latest" for the environment's image
// and with each mutate-fix task's tag (TaskTag) for the image whose
// /repo is at the task's base_commit.
const ImagesDir = "images"

// EnvRef is the name an environment's image goes by: its id, lower case.
func EnvRef(e *env.Env) string { return strings.ToLower(e.ID) }

// TaskTag is a task's image tag: its instance id in lower case, each run
// of other characters than letters and digits made one '-', so that both
// Docker's tag grammar and the OCI layout's ref names (where "__" is not
// a separator) take it.
func TaskTag(id string) string {
	t := strings.Trim(nonTag.ReplaceAllString(strings.ToLower(id), "-"), "-")
	if len(t) > 128 {
		t = t[:128]
	}
	return t
}

var nonTag = regexp.MustCompile(`[^a-z0-9]+`)

// ImageName is the name an image of the export is loaded under
// (skopeo copy oci:DIR/images/ENV:TAG docker-daemon:NAME).
func ImageName(e *env.Env, tag string) string { return "cwm/" + EnvRef(e) + ":" + tag }

// taskLayerScript commits the bug in /repo as the mirror commits it (the
// same tree, parent, author, dates and message, so the same commit) and
// writes to stdout a tar of what changed: the files, the new git objects,
// HEAD and the index. It prints the commit to stderr's last line.
const taskLayerScript = `set -euo pipefail
cd /repo
id=$1; date=$2; patch=$3
list() { find .git -printf '%T@ %s %p\n' | sort; }
list > /tmp/cwm-before
git checkout -q --detach
git apply --index --whitespace=nowarn "$patch"
GIT_AUTHOR_NAME=cwm GIT_AUTHOR_EMAIL=cwm@localhost GIT_COMMITTER_NAME=cwm GIT_COMMITTER_EMAIL=cwm@localhost \
  GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date git commit -q --no-verify -m "$id: the bug of the task"
list > /tmp/cwm-after
{ comm -13 /tmp/cwm-before /tmp/cwm-after | cut -d' ' -f3- ; git diff --name-only HEAD^ HEAD; } | sed 's|^|repo/|' | sort -u > /tmp/cwm-files
tar -C / --no-recursion -cf - -T /tmp/cwm-files
git rev-parse HEAD >&2`

// writeImages writes e's image and one per mutate-fix task of ts (whose
// base commits are commits) under out/images/ENV, and returns each task's
// image name. An environment on the host's root has no image: its tasks
// get none, and why is returned.
func writeImages(ctx context.Context, sbs *env.Sandboxes, e *env.Env, ts []*task.Task, commits map[string]string, out string) (map[string]string, string, error) {
	dir := filepath.Join(out, ImagesDir, EnvRef(e))
	if err := os.RemoveAll(dir); err != nil {
		return nil, "", err
	}
	if _, err := envoci.WriteImage(e, dir, "latest"); err != nil {
		if errkind.Is(err, errkind.Input) {
			return nil, err.Error(), nil
		}
		return nil, "", fmt.Errorf("write the image of %s: %w", e.ID, err)
	}
	names := map[string]string{}
	sb, err := sbs.Open(ctx, e)
	if err != nil {
		return nil, "", err
	}
	defer sb.Close()
	for _, t := range ts {
		if t.BugPatch == "" {
			names[t.InstanceID] = ImageName(e, "latest")
			continue
		}
		tag := TaskTag(t.InstanceID)
		layer := filepath.Join(dir, ".task-"+tag+".tar")
		got, err := taskLayer(ctx, sb, t, layer)
		if err != nil {
			return nil, "", fmt.Errorf("image of %s: %w", t.InstanceID, err)
		}
		if got != commits[t.InstanceID] {
			os.Remove(layer)
			return nil, "", fmt.Errorf("image of %s: the bug's commit is %s in the image, %s in the mirror", t.InstanceID, got, commits[t.InstanceID])
		}
		_, err = envoci.DeriveImage(dir, "latest", tag, layer)
		os.Remove(layer)
		if err != nil {
			return nil, "", err
		}
		names[t.InstanceID] = ImageName(e, tag)
	}
	return names, "", nil
}

// taskLayer writes to path the tar of what t's bug commit changes in a
// reset sb, and returns the commit.
func taskLayer(ctx context.Context, sb *sandbox.Sandbox, t *task.Task, path string) (string, error) {
	if err := sb.Reset(ctx); err != nil {
		return "", fmt.Errorf("reset sandbox: %w", err)
	}
	if err := sb.WriteFile(ctx, "/tmp/cwm-bug.patch", []byte(t.BugPatch), 0o644); err != nil {
		return "", err
	}
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"bash", "-c", taskLayerScript, "layer", t.InstanceID, commitDate(t.CreatedAt), "/tmp/cwm-bug.patch"},
		Stdout: f, Capture: 64 << 10, OutputLimit: -1, Timeout: 10 * time.Minute})
	if err != nil {
		return "", err
	}
	if !res.Success() {
		return "", errors.New("commit the bug: " + res.Describe() + ": " + strings.TrimSpace(string(res.Stderr)))
	}
	return lastLineOf(string(res.Stderr)), nil
}

func lastLineOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
