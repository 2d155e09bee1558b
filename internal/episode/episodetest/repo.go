// Package episodetest holds the test repository of episodes: a small
// calculator with a unittest suite, a bug-fix task on it, and history an
// agent must not see.
package episodetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/task"
)

// The test repository: calc.py with a unittest suite. The task's bug
// turns add's "+" into "-"; the gold patch turns it back.
const calcPy = `def add(a, b):
    return a + b


def sub(a, b):
    return a - b
`

const testCalcPy = `import unittest

from calc import add, sub


class TestCalc(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_sub(self):
        self.assertEqual(sub(5, 3), 2)


if __name__ == "__main__":
    unittest.main()
`

// gitEnv makes the test repository's commits deterministic.
var gitEnv = []string{
	"GIT_AUTHOR_NAME=Ada Author", "GIT_AUTHOR_EMAIL=ada@example.com", "GIT_AUTHOR_DATE=2020-01-02T03:04:05+01:00",
	"GIT_COMMITTER_NAME=Carl Committer", "GIT_COMMITTER_EMAIL=carl@example.com", "GIT_COMMITTER_DATE=2021-02-03T04:05:06+02:00",
	"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
}

// Git runs git in dir with a fixed identity and dates, failing t on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// CalcRepo makes a layer directory holding the test repository at /repo, with
// history an agent must not see: a branch and a tag past the base, a
// remote with its refs, the pre-bug commit itself, and a parent commit
// holding the code without the bug. It returns the
// layer and a task whose bug is the "+" turned "-".
func CalcRepo(t testing.TB) (string, *task.Task) {
	t.Helper()
	layer := t.TempDir()
	repo := filepath.Join(layer, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	Git(t, repo, "init", "-q", "-b", "main")
	write("calc.py", calcPy)
	Git(t, repo, "add", ".")
	Git(t, repo, "commit", "-q", "-m", "Add calc")
	// HEAD has a parent that holds calc.py as it should be: amending HEAD
	// alone would show the bug as part of HEAD's change.
	write("test_calc.py", testCalcPy)
	Git(t, repo, "add", ".")
	Git(t, repo, "commit", "-q", "-m", "Add tests")
	// History past the base: a fix on another branch, a tag, a remote.
	Git(t, repo, "checkout", "-q", "-b", "future")
	write("NOTES", "SECRET-FUTURE-COMMIT\n")
	Git(t, repo, "add", ".")
	Git(t, repo, "commit", "-q", "-m", "SECRET-FUTURE-COMMIT")
	Git(t, repo, "tag", "v9", "HEAD")
	Git(t, repo, "checkout", "-q", "main")
	Git(t, repo, "remote", "add", "origin", "https://example.com/calc.git")
	Git(t, repo, "update-ref", "refs/remotes/origin/main", "future")
	Git(t, repo, "gc", "-q")

	write("calc.py", strings.Replace(calcPy, "return a + b", "return a - b", 1))
	bug := Git(t, repo, "diff")
	// -R swaps the prefixes too; swap them back.
	gold := Git(t, repo, "diff", "-R", "--src-prefix=b/", "--dst-prefix=a/")
	Git(t, repo, "checkout", "-q", "calc.py")
	return layer, &task.Task{
		InstanceID: "calc-1", Repo: "example/calc", ProblemStatement: "add(2, 3) returns -1 instead of 5 (task calc-1).",
		BugPatch: bug, Patch: gold, FailToPass: []string{"test_calc.TestCalc.test_add"}, EnvID: "calc-env",
	}
}
