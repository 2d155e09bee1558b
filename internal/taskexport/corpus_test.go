package taskexport

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cwm/internal/pytestenv"
	"cwm/internal/task"
	"cwm/internal/tasks"
)

// corpusRepos are the bundled corpus repositories (testdata/corpus) and
// their pinned commits.
var corpusRepos = []struct{ name, commit string }{
	{"iniconfig", "71901257f6cbf660e77b1077e00f11a0f440be1e"},
	{"mdurl", "524d2edbbcb8bb48301ba716c7482827bcabb281"},
	{"termcolor", "9477ddf195a4308710a54ef041eb16ac85639376"},
}

// unbundle makes a repository of a shallow bundle: its pack indexed, the
// commit the shallow boundary, main checked out at it.
func unbundle(t *testing.T, bundle, commit string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(bundle), ".bundle"))
	abs, _ := filepath.Abs(bundle)
	sh := `set -e
git init -q -b main "$1" && cd "$1"
git bundle unbundle "$2" >/dev/null
echo "$3" > .git/shallow
git update-ref refs/heads/main "$3"
git checkout -q main`
	if b, err := exec.Command("bash", "-c", sh, "unbundle", dir, abs, commit).CombinedOutput(); err != nil {
		t.Fatalf("unbundle %s: %v\n%s", bundle, err, b)
	}
	return dir
}

// TestExportCorpus exports mutate-fix tasks of three real repositories of
// the corpus (pinned commits, bundled in testdata/corpus) for SWE-bench
// and Harbor and grades them with the real swebench package: every
// exported instance's gold patch RESOLVED_FULL, its empty patch
// RESOLVED_NO, and reward 1 and 0 from Harbor's tests/test.sh. The ids
// left out (a space, a key two ids share) are counted, as are tasks
// dropped with no FAIL_TO_PASS left.
func TestExportCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three repositories' environments, mutates them and grades with swebench")
	}
	py := pytestenv.Python(t, swebenchRequirements)
	var total exportCounts
	for _, r := range corpusRepos {
		t.Run(r.name, func(t *testing.T) {
			t0 := time.Now()
			src := unbundle(t, filepath.Join("testdata", "corpus", r.name+".bundle"), r.commit)
			e, _ := bookwormEnv(t, src, r.name+"-bookworm", "")
			out := filepath.Join(t.TempDir(), "tasks.jsonl")
			if _, err := tasks.Mutate(context.Background(), testSandboxes, e, tasks.MutateOptions{Out: out, Max: 3, PerFunction: 1, Seed: 1,
				Workers: 2, TimeoutFactor: 10}); err != nil { // a loaded machine: a suite may take several times its baseline
				t.Fatalf("Mutate: %v", err)
			}
			ts, err := task.Load(out)
			if err != nil || len(ts) == 0 {
				t.Fatalf("%s: %v, %d tasks", r.name, err, len(ts))
			}
			t.Logf("%s: environment (%d tests) and %d tasks in %.0fs", r.name, len(e.Baseline), len(ts), time.Since(t0).Seconds())
			_, _, c := checkSWEBench(t, py, ts, false)
			ones, zeros := checkHarbor(t, ts, 0)
			t.Logf("%s: %s; harbor: reward 1 for gold %d, 0 for empty %d (%.0fs)", r.name, c, ones, zeros, time.Since(t0).Seconds())
			total.tasks += c.tasks
			total.exported += c.exported
			total.leftOutTests += c.leftOutTests
			total.gold += c.gold
			total.empty += c.empty
			total.dropped = append(total.dropped, c.dropped...)
		})
	}
	t.Logf("corpus: %s", total)
}
