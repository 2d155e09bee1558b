package env

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"cwm/internal/errkind"
	"cwm/internal/hostexec"
)

// History is the git history of an environment's source repository, read
// on the host. A layer holds the commit's tree and a shallow repository
// (the commit, back to its nearest version tag), not the history: that
// stays with the source, and what needs it (commit tasks, builds of older
// commits) reads it here. Only git runs on it, never the repository's code.
type History struct {
	dir string // a git directory or work tree holding the commit
	tmp string // a bare clone of a URL source, removed by Close
}

// historyGitTimeout bounds one git command on the history; a clone of a
// URL source gets cloneTimeout.
const (
	historyGitTimeout = 10 * time.Minute
	cloneTimeout      = 30 * time.Minute
)

// OpenHistory opens the history of e's source: its directory, or a bare
// clone of its URL made for the purpose. e must come from git.
func OpenHistory(ctx context.Context, e *Env) (*History, error) {
	if e.Repository.Kind != "git" {
		return nil, errkind.Errorf(errkind.Input, "environment %s was built from a plain directory, which has no history", e.ID)
	}
	h := &History{dir: e.Repository.Location}
	if st, err := os.Stat(h.dir); err != nil || !st.IsDir() {
		tmp, err := os.MkdirTemp("", "cwm-history-")
		if err != nil {
			return nil, fmt.Errorf("clone the history of %s: %w", e.Repository.Location, err)
		}
		h.dir, h.tmp = tmp+"/repo.git", tmp
		if _, err := h.run(ctx, "", cloneTimeout, "clone", "--quiet", "--bare", "--no-tags", e.Repository.Location, h.dir); err != nil {
			h.Close()
			return nil, errkind.Errorf(errkind.Input, "clone the history of %s: %v", e.Repository.Location, err)
		}
	}
	if _, err := h.Git(ctx, "cat-file", "-e", e.Commit+"^{commit}"); err != nil {
		h.Close()
		return nil, errkind.Errorf(errkind.Input, "the history of %s: commit %s is not in %s (moved or rewritten since the build?)", e.ID, e.Commit, e.Repository.Location)
	}
	return h, nil
}

// Git runs git with args in the history and returns its output.
func (h *History) Git(ctx context.Context, args ...string) (string, error) {
	return h.run(ctx, h.dir, historyGitTimeout, args...)
}

func (h *History) run(ctx context.Context, dir string, timeout time.Duration, args ...string) (string, error) {
	argv := []string{"git", "-c", "safe.directory=*", "-c", "core.quotepath=false", "-c", "color.ui=false", "-c", "core.pager=cat"}
	if dir != "" {
		argv = append(argv, "-C", dir)
	}
	out, err := hostexec.Output(ctx, hostexec.Cmd{Args: append(argv, args...), Timeout: timeout,
		Env: []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C"}})
	if err != nil {
		return string(out), fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// Close removes a clone OpenHistory made.
func (h *History) Close() {
	if h != nil && h.tmp != "" {
		os.RemoveAll(h.tmp)
	}
}
