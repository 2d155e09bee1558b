package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cwm/internal/sandbox"
)

// setupScript plants the task's bug and removes what git could tell about
// the fix (CWM-SPEC 2.2). The bug patch is applied and folded into HEAD:
// HEAD is re-made with the buggy tree, its author, dates and message, so
// neither `git diff`, `git show` nor `git log -p` shows the bug being
// introduced. Then, as CWM's retain_only_current_branch_ancestor_commits:
// remotes go, every ref but the current branch goes, its upstream is
// unset, the reflog is emptied, and what became unreachable (the original
// HEAD among it) is deleted. CWM runs `git gc --prune=now` for the last
// step; its object work is `repack -a -d` (a new pack of what is reachable,
// old packs deleted) and `prune --expire=now` (unreachable loose objects),
// which is what runs here, without gc's other five subprocesses: every git
// process costs start-up time on a loaded machine. Arguments: $1 the
// repository, $2 "1" when the bug patch comes on stdin. It prints the new
// HEAD.
const setupScript = `set -eo pipefail
cd "$1"
committer=$(git log -1 --format='%cn%n%ce%n%cI') || { echo "no commit at HEAD" >&2; exit 3; }
if [ "$2" = 1 ]; then
	git apply --index --whitespace=nowarn - || { echo "the bug patch does not apply" >&2; exit 4; }
	{ read -r GIT_COMMITTER_NAME; read -r GIT_COMMITTER_EMAIL; read -r GIT_COMMITTER_DATE; } <<<"$committer"
	export GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL GIT_COMMITTER_DATE
	git -c commit.gpgSign=false commit -q --amend --no-edit --no-verify --allow-empty
fi
for r in $(git remote); do git remote remove "$r"; done
cur=$(git symbolic-ref --quiet --short HEAD || true)
git for-each-ref --format='%(refname)' refs | awk -v cur="$cur" '$0 != "refs/heads/" cur { print "delete " $0 }' | git update-ref --stdin
git branch --unset-upstream >/dev/null 2>&1 || true
gitdir=$(git rev-parse --git-dir)
rm -f "$gitdir/ORIG_HEAD" "$gitdir/FETCH_HEAD" "$gitdir/MERGE_HEAD"
git reflog expire --expire=now --all
git repack -a -d -q
git prune --expire=now
git rev-parse HEAD
`

// prepareRepo runs setupScript in the sandbox and returns the commit the
// episode starts from.
func prepareRepo(ctx context.Context, sb *sandbox.Sandbox, repo, bugPatch string, timeout time.Duration) (string, error) {
	cmd := sandbox.Cmd{Args: []string{"/bin/bash", "-c", setupScript, "setup", repo, "0"}, Timeout: timeout}
	if bugPatch != "" {
		cmd.Args[5] = "1"
		cmd.Stdin = strings.NewReader(bugPatch)
	}
	r, err := sb.Exec(ctx, cmd)
	if err != nil {
		return "", fmt.Errorf("prepare repository %s: %w", repo, err)
	}
	if !r.Success() {
		return "", fmt.Errorf("prepare repository %s: %s: %s", repo, r.Describe(), strings.TrimSpace(string(r.Stderr)))
	}
	return strings.TrimSpace(string(r.Stdout)), nil
}

// maxPatchBytes bounds the final diff kept in a trajectory.
const maxPatchBytes = 32 << 20

// finalDiff is the repository's change since base, new files included: it
// is what the agent did, whether or not it submitted.
func finalDiff(ctx context.Context, sb *sandbox.Sandbox, repo, base string, timeout time.Duration) (string, error) {
	r, err := sb.Exec(ctx, sandbox.Cmd{
		Args:    []string{"/bin/bash", "-c", `cd "$1" && git add -A >/dev/null && git diff --cached "$2"`, "diff", repo, base},
		Timeout: timeout, Capture: maxPatchBytes + 1,
	})
	if err != nil {
		return "", fmt.Errorf("diff repository %s: %w", repo, err)
	}
	if !r.Success() {
		return "", fmt.Errorf("diff repository %s: %s: %s", repo, r.Describe(), strings.TrimSpace(string(r.Stderr)))
	}
	if r.StdoutBytes > maxPatchBytes {
		return "", fmt.Errorf("diff repository %s: %d bytes, more than %d", repo, r.StdoutBytes, maxPatchBytes)
	}
	return string(r.Stdout), nil
}
