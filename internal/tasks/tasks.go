// Package tasks makes verified bug-fix tasks, in the SWE-bench instance
// schema, from environments: mutate-fix tasks from mutants of the
// functions the passing tests execute (CWM-SPEC section 3), issue-fix tasks
// from fix commits of a repository's history, and the re-verification of
// any task file.
//
// Every test run happens in a sandbox on the task's environment, reset
// between steps. A mutant that survives, crashes at import or makes the
// tests hang is a decision with a reason, recorded next to the output so a
// re-run resumes where the last one stopped; only failures of cwm itself
// are Go errors. See docs/tasks.md.
package tasks

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"

	"cwm/internal/env"
	"cwm/internal/sandbox"
	"cwm/internal/testrun"
)

// gitArgs runs git with the settings that make its diffs applicable
// whatever the repository's own configuration says.
func gitArgs(args ...string) []string {
	return append([]string{"git", "-c", "core.quotepath=false", "-c", "diff.noprefix=false",
		"-c", "diff.mnemonicPrefix=false", "-c", "color.ui=false", "-c", "core.pager=cat"}, args...)
}

// execOut runs a command in sb and returns its stdout; a command that does
// not succeed is an error carrying the end of its stderr.
func execOut(ctx context.Context, sb *sandbox.Sandbox, cmd sandbox.Cmd) (string, error) {
	if cmd.Timeout == 0 {
		cmd.Timeout = 5 * time.Minute
	}
	if cmd.Capture == 0 {
		cmd.Capture = 64 << 20
	}
	res, err := sb.Exec(ctx, cmd)
	if err != nil {
		return "", err
	}
	if !res.Success() {
		what := cmd.Shell
		if what == "" {
			what = strings.Join(cmd.Args, " ")
		}
		return string(res.Stdout), fmt.Errorf("%s: %s: %s", clip(what, 120), res.Describe(), lastLine(res.Stderr))
	}
	return string(res.Stdout), nil
}

// patchError is a patch that does not apply: a result about a task, not a
// failure of cwm.
type patchError struct {
	name string
	msg  string
}

func (e *patchError) Error() string { return e.name + " does not apply: " + e.msg }

// applyPatch applies a patch to /repo with git apply and drops the
// bytecode of the Python files it touches, in one command.
func applyPatch(ctx context.Context, sb *sandbox.Sandbox, name, patch string) error {
	if patch == "" {
		return nil
	}
	p := "/tmp/cwm-" + name + ".patch"
	if err := sb.WriteFile(ctx, p, []byte(patch), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	script := `git -c core.quotepath=false apply --whitespace=nowarn "$1" || exit 1
shift
for f in "$@"; do rm -f -- "$(dirname -- "$f")/__pycache__/$(basename -- "$f" .py)".*.pyc; done`
	args := append([]string{"bash", "-c", script, "apply", p}, patchedPython(patch)...)
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: args, Dir: "/repo", Timeout: time.Minute})
	if err != nil {
		return fmt.Errorf("apply %s: %w", name, err)
	}
	if !res.Success() {
		return &patchError{name: name, msg: lastLine(res.Stderr)}
	}
	return nil
}

// patchedPython lists the Python files a git patch writes.
func patchedPython(patch string) []string {
	var out []string
	for _, line := range strings.Split(patch, "\n") {
		if f, ok := strings.CutPrefix(line, "+++ b/"); ok && strings.HasSuffix(f, ".py") {
			out = append(out, f)
		}
	}
	return out
}

// Why bytecode is dropped: the layer's .pyc files were compiled for the
// environment's tree, and Python trusts a .pyc whose recorded source size
// and mtime (in whole seconds) match, which a same-size edit made within
// the same second as the checkout could.

// mutantPatches writes a mutated file into /repo and returns git's diff of
// it (the bug patch) and the reverse (the gold patch), from one command.
// The tree is only diffed, never run: its bytecode can stay.
func mutantPatches(ctx context.Context, sb *sandbox.Sandbox, file string, data []byte) (bug, gold string, err error) {
	if err := sb.WriteFile(ctx, "/repo/"+file, data, 0o644); err != nil {
		return "", "", fmt.Errorf("write mutant of %s: %w", file, err)
	}
	// -R swaps the sides and their prefixes with them: the reversed diff
	// swaps the prefixes too, so that both patches read a/ then b/.
	const sep = "\x00cwm-reverse\x00\n"
	script := `set -e
g() { git -c core.quotepath=false -c diff.noprefix=false -c diff.mnemonicPrefix=false -c color.ui=false diff --no-ext-diff --no-textconv "$@"; }
g --src-prefix=a/ --dst-prefix=b/ -- "$1"
printf '\0cwm-reverse\0\n'
g -R --src-prefix=b/ --dst-prefix=a/ -- "$1"`
	out, err := execOut(ctx, sb, sandbox.Cmd{Args: []string{"bash", "-c", script, "diff", file}, Dir: "/repo"})
	if err != nil {
		return "", "", fmt.Errorf("diff %s: %w", file, err)
	}
	bug, gold, ok := strings.Cut(out, sep)
	if !ok || bug == "" || gold == "" {
		return "", "", fmt.Errorf("diff %s: no change", file)
	}
	return bug, gold, nil
}

// treeHash is the git tree of the work tree as it is (ignored files
// aside), and that of HEAD: equal hashes, equal trees.
func treeHash(ctx context.Context, sb *sandbox.Sandbox) (tree, head string, err error) {
	out, err := execOut(ctx, sb, sandbox.Cmd{Shell: "git add -A . && git write-tree && git rev-parse 'HEAD^{tree}'", Dir: "/repo"})
	if err != nil {
		return "", "", fmt.Errorf("hash the work tree: %w", err)
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return "", "", fmt.Errorf("hash the work tree: unexpected output %q", out)
	}
	return f[0], f[1], nil
}

// budget derives test-run timeouts from the environment's baseline, so a
// mutant that makes a test loop forever is stopped after a few times the
// time the same tests took when they passed.
type budget struct {
	perTest  map[string]float64 // slowest baseline time of each test
	overhead float64            // time of a run spent outside tests: start-up, collection
	total    float64            // slowest whole run
	factor   float64
	floor    time.Duration
}

func newBudget(e *env.Env, factor float64) budget {
	if factor <= 0 {
		factor = 3
	}
	b := budget{perTest: map[string]float64{}, factor: factor, floor: 5 * time.Second}
	var inTests float64
	for _, t := range e.Baseline {
		m := 0.0
		for _, s := range t.Seconds {
			m = max(m, s)
		}
		b.perTest[t.ID] = m
		inTests += m
	}
	for _, r := range e.Runs {
		b.total = max(b.total, r.Seconds)
	}
	b.overhead = max(0, b.total-inTests)
	b.total = max(b.total, inTests)
	return b
}

// timeout is the limit of a run of ids (nil: the whole suite).
func (b budget) timeout(ids []string) time.Duration {
	secs := b.total
	if ids != nil {
		secs = b.overhead
		for _, id := range ids {
			secs += b.perTest[id]
		}
	}
	return b.floor + time.Duration(b.factor*secs*float64(time.Second))
}

// runTests runs ids (nil: the whole suite) in sb.
func runTests(ctx context.Context, sb *sandbox.Sandbox, e *env.Env, ids []string, timeout time.Duration) (*testrun.Report, error) {
	rep, err := testrun.Run(ctx, sb, e.TestCommand, testrun.Options{IDs: ids, Timeout: timeout,
		PythonVersion: e.Python, OutputLimit: e.Limits.Output})
	if err != nil {
		return nil, fmt.Errorf("run tests: %w", err)
	}
	return rep, nil
}

// stopped says why a run was cut short, or "" when it ended by itself.
func stopped(rep *testrun.Report, timeout time.Duration) string {
	switch rep.Result.Reason {
	case sandbox.ReasonNone:
		return ""
	case sandbox.ReasonTimeout:
		return fmt.Sprintf("the tests hang: still running after %s, several times what they took at baseline", timeout.Round(100*time.Millisecond))
	default:
		return "the tests were stopped by the " + string(rep.Result.Reason) + " limit"
	}
}

// outcomes indexes a report by test id.
func outcomes(rep *testrun.Report) map[string]testrun.Test {
	m := make(map[string]testrun.Test, len(rep.Tests))
	for _, t := range rep.Tests {
		m[t.ID] = t
	}
	return m
}

func failed(o testrun.Outcome) bool { return o == testrun.Fail || o == testrun.Error }

// RepoName is the SWE-bench "repo" of an environment: owner/name when its
// source is a URL with both, else the environment's name.
func RepoName(e *env.Env) string {
	if owner, name := ownerName(e.Repository.Location); owner != "" {
		return owner + "/" + name
	}
	return e.Name
}

// ownerName takes "owner" and "name" from a repository URL (https, ssh,
// scp-like git@host:owner/name) or an "owner/name" string.
func ownerName(s string) (string, string) {
	s = strings.TrimSpace(strings.ToLower(s))
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, ".") {
		return "", "" // a local path says nothing about who owns it
	}
	if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Host != "" {
		s = u.Path
	} else if at := strings.Index(s, "@"); at >= 0 && strings.Contains(s[at:], ":") {
		s = s[strings.Index(s[at:], ":")+at+1:]
	} else if i := strings.Index(s, "/"); i > 0 && strings.Contains(s[:i], ".") {
		s = s[i:] // github.com/owner/name
	}
	s = strings.TrimSuffix(strings.Trim(s, "/"), ".git")
	parts := strings.Split(s, "/")
	if len(parts) < 2 || parts[len(parts)-2] == "" || parts[len(parts)-1] == "" {
		return "", ""
	}
	return parts[len(parts)-2], parts[len(parts)-1]
}

// instanceID makes SWE-bench-style ids: owner__name__kind-hash.
func instanceID(repo, kind, hash string) string {
	return strings.ReplaceAll(repo, "/", "__") + "__" + kind + "-" + hash
}

func lastLine(b []byte) string {
	s := strings.TrimRight(string(b), "\n ")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return clip(s, 300)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// isTestFile is the split of a commit into test changes and source
// changes: files under a tests/ or test/ directory, test_*.py, *_test.py
// and conftest.py.
func isTestFile(p string) bool {
	base := path.Base(p)
	if strings.HasSuffix(base, ".py") && (strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || base == "conftest.py") {
		return true
	}
	for _, d := range strings.Split(path.Dir(p), "/") {
		if d == "tests" || d == "test" || d == "testing" {
			return true
		}
	}
	return false
}
