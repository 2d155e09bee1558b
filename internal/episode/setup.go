package episode

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cwm/internal/errkind"
	"cwm/internal/sandbox"
	"cwm/internal/task"
)

// History says how the task's bug is folded into the repository's history
// so that git cannot show it being introduced.
type History string

const (
	// HistorySquash makes HEAD a root commit holding the buggy tree, with
	// HEAD's author, dates and message; its ancestors are dropped. Nothing
	// in git shows the bug as a change: `git show` and `git log -p` present
	// it as part of the first and only commit.
	HistorySquash History = "squash"
	// HistoryAmend re-makes HEAD with the buggy tree and keeps its
	// ancestors. When HEAD has a parent whose version of the mutated lines
	// differs, `git show` and `git log -p` display the mutation as part of
	// HEAD's change, fix included: use it only for tasks where that is
	// acceptable.
	HistoryAmend History = "amend"
)

// setupScript plants the task's bug and removes what git could tell about
// the fix (CWM-SPEC 2.2). The bug patch is applied and folded into HEAD
// (see History), keeping HEAD's author, dates and message. Then, as CWM's
// retain_only_current_branch_ancestor_commits: remotes go, every ref but
// the current branch goes, its upstream is unset, the reflog is emptied,
// and what became unreachable (the original HEAD among it) is deleted. CWM
// runs `git gc --prune=now` for the last step; its object work is `repack
// -a -d` (a new pack of what is reachable, old packs deleted) and `prune
// --expire=now` (unreachable loose objects), which is what runs here,
// without gc's other five subprocesses: every git process costs start-up
// time on a loaded machine. Arguments: $1 the repository, $2 "1" when the
// bug patch comes on stdin, $3 the History. It prints the new HEAD.
const setupScript = `set -eo pipefail
cd "$1"
meta=$(git log -1 --format='%an%n%ae%n%aI%n%cn%n%ce%n%cI') || { echo "no commit at HEAD" >&2; exit 3; }
gitdir=$(git rev-parse --git-dir)
if [ "$2" = 1 ]; then
	# The index's stat data is the build's: a layer copied or moved since
	# (another machine, a registry) would make every file "not match".
	git update-index -q --refresh >/dev/null 2>&1 || true
	git apply --index --whitespace=nowarn - || { echo "the bug patch does not apply" >&2; exit 4; }
	{ read -r GIT_AUTHOR_NAME; read -r GIT_AUTHOR_EMAIL; read -r GIT_AUTHOR_DATE
	  read -r GIT_COMMITTER_NAME; read -r GIT_COMMITTER_EMAIL; read -r GIT_COMMITTER_DATE; } <<<"$meta"
	export GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_AUTHOR_DATE GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL GIT_COMMITTER_DATE
	if [ "$3" = squash ]; then
		commit=$(git log -1 --format=%B | git -c commit.gpgSign=false commit-tree "$(git write-tree)")
		git update-ref HEAD "$commit"
		rm -f "$gitdir/shallow"
	else
		git -c commit.gpgSign=false commit -q --amend --no-edit --no-verify --allow-empty
	fi
fi
for r in $(git remote); do git remote remove "$r"; done
cur=$(git symbolic-ref --quiet --short HEAD || true)
git for-each-ref --format='%(refname)' refs | awk -v cur="$cur" '$0 != "refs/heads/" cur { print "delete " $0 }' | git update-ref --stdin
git branch --unset-upstream >/dev/null 2>&1 || true
rm -f "$gitdir/ORIG_HEAD" "$gitdir/FETCH_HEAD" "$gitdir/MERGE_HEAD"
git reflog expire --expire=now --all
git repack -a -d -q
git prune --expire=now
git rev-parse HEAD
`

// importedScript puts an imported task's repository at its base_commit
// (when the image's HEAD is elsewhere) and removes its hidden tests (R2E-Gym's
// /r2e_tests), which only grading copies in: the agent works on what the
// dataset's agents see. Arguments: $1 the repository, $2 base_commit, $3
// the hidden tests' directory or "".
const importedScript = `set -uo pipefail
cd "$1" || exit 3
git config --global --add safe.directory '*' 2>/dev/null
if [ -n "$2" ] && [ "$(git rev-parse -q --verify HEAD)" != "$(git rev-parse -q --verify "$2^{commit}")" ]; then
	git checkout -q -f "$2" || { echo "base_commit $2 is not in the repository" >&2; exit 4; }
fi
if [ -n "$3" ]; then rm -rf -- "$3"; fi
`

// prepareImported runs importedScript for t when it is an imported task.
func prepareImported(ctx context.Context, sb *sandbox.Sandbox, repo string, t *task.Task, timeout time.Duration) error {
	if t.Imported == nil {
		return nil
	}
	r, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"/bin/bash", "-c", importedScript, "imported", repo, t.BaseCommit, t.Imported.HiddenTests}, Timeout: timeout})
	if err != nil {
		return fmt.Errorf("prepare repository %s: %w", repo, err)
	}
	if !r.Success() {
		return fmt.Errorf("prepare repository %s: %s: %s", repo, r.Describe(), strings.TrimSpace(string(r.Stderr)))
	}
	return nil
}

// prepareRepo runs setupScript in the sandbox and returns the commit the
// episode starts from.
func prepareRepo(ctx context.Context, sb *sandbox.Sandbox, repo, bugPatch string, h History, timeout time.Duration) (string, error) {
	if h != "" && h != HistorySquash && h != HistoryAmend {
		return "", errkind.Errorf(errkind.Usage, "history %q: want squash or amend", h)
	}
	if h == "" {
		h = HistorySquash
	}
	cmd := sandbox.Cmd{Args: []string{"/bin/bash", "-c", setupScript, "setup", repo, "0", string(h)}, Timeout: timeout}
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

// diffScript stages every change in a copy of the index (GIT_INDEX_FILE,
// beside the real one in the git directory, which git add needs writable
// anyway, and removed on exit) and diffs it against base: new files are
// included, and the repository's own index, which the agent sees in git
// status and git diff --cached, is left as the agent made it. The copy
// starts from the real index so that git add only rehashes what changed,
// keeping its modification time (cp -p): git trusts an entry's cached
// stat only when the file is older than the index, and a fresh copy would
// hide an edit of the same size made in the second the index was
// written. A repository without an index starts from none (an empty file
// is not an index).
const diffScript = `cd "$1" || exit
idx=$(git rev-parse --absolute-git-dir)/cwm-diff-index.$$ || exit
trap 'rm -f "$idx"' EXIT
cp -p "$(git rev-parse --git-path index)" "$idx" 2>/dev/null || rm -f "$idx"
GIT_INDEX_FILE=$idx git add -A >/dev/null && GIT_INDEX_FILE=$idx git diff --cached "$2"`

// finalDiff is the repository's change since base, new files included: it
// is what the agent did, whether or not it submitted. It changes nothing
// in the repository (diffScript).
func finalDiff(ctx context.Context, sb *sandbox.Sandbox, repo, base string, timeout time.Duration) (string, error) {
	r, err := sb.Exec(ctx, sandbox.Cmd{
		Args:    []string{"/bin/bash", "-c", diffScript, "diff", repo, base},
		Timeout: timeout, Capture: maxPatchBytes + 1,
	})
	if err != nil {
		return "", fmt.Errorf("diff repository %s: %w", repo, err)
	}
	if !r.Success() {
		return "", fmt.Errorf("diff repository %s: %s: %s", repo, r.Describe(), strings.TrimSpace(string(r.Stderr)))
	}
	if r.StdoutBytes > maxPatchBytes {
		return "", errkind.Errorf(errkind.Limit, "diff repository %s: %d bytes, more than %d", repo, r.StdoutBytes, maxPatchBytes)
	}
	return string(r.Stdout), nil
}
