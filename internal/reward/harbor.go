package reward

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"cwm/internal/env"
	"cwm/internal/sandbox"
	"cwm/internal/task"
	"cwm/internal/testrun"
)

// HarborStage is where an imported Harbor task's tests/ and solution/
// wait in its base, outside the working directory, until grading copies
// them to /tests and /solution as Harbor's verifier and oracle do.
const HarborStage = "/cwm-harbor"

// HarborIn grades a Harbor task in sb (a fresh sandbox on its
// environment) as Harbor does: after its gold solution (gold) or with
// candidate applied, tests/test.sh run with env, and the reward read. It
// is the one place that knows how a Harbor task is graded: the import
// validates with it, Grade grades with it.
func HarborIn(ctx context.Context, sb *sandbox.Sandbox, t *task.Task, env []string, gold bool, candidate string) (*HarborRun, error) {
	if err := sb.WriteFile(ctx, "/tmp/cwm-import-candidate.diff", []byte(candidate), 0o644); err != nil {
		return nil, fmt.Errorf("write the patch of %s: %w", t.InstanceID, err)
	}
	mode := "patch"
	if gold {
		mode = "gold"
	}
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"bash", "-c", harborScript, "grade", t.Imported.Workdir, mode}, Env: env, Capture: 1 << 20})
	if err != nil {
		return nil, fmt.Errorf("grade %s: %w", t.InstanceID, err)
	}
	r := &HarborRun{Log: string(res.Stdout) + string(res.Stderr)}
	if why := lastLine(res.Stderr); res.ExitCode >= 20 && res.ExitCode <= 25 && strings.HasPrefix(why, "cwm: ") {
		r.Problem = strings.TrimPrefix(why, "cwm: ")
		return r, nil
	}
	if res.Reason != sandbox.ReasonNone {
		r.Problem = fmt.Sprintf("the tests were stopped (%s)", res.Reason)
		return r, nil
	}
	if gold {
		if b, err := sb.ReadFile(ctx, "/tmp/cwm-harbor-gold.diff", 16<<20); err == nil {
			r.Gold = string(b)
		}
	}
	r.Reward, r.OK, r.Problem = readReward(ctx, sb)
	return r, nil
}

// harborScript grades a Harbor task in its sandbox as Harbor does: the
// gold run copies solution/ to /solution and runs solve.sh (then writes
// what it changed, when the working directory is a git repository, as
// the gold patch); any other run applies the candidate patch. Then
// tests/ goes to /tests and test.sh runs. Its arguments: the working
// directory and the mode (gold or patch). Exit 20-25 say which step failed.
const harborScript = `set -uo pipefail
wd=$1 mode=$2
git config --global --add safe.directory '*' 2>/dev/null
rm -rf /tests /solution /logs/verifier
mkdir -p /logs/verifier /logs/agent
cd "$wd" 2>/dev/null || { echo "cwm: the image has no $wd" >&2; exit 20; }
if [ "$mode" = gold ]; then
  cp -a ` + HarborStage + `/solution /solution
  bash /solution/solve.sh > /logs/agent/solve.txt 2>&1
  s=$?
  if [ $s != 0 ]; then tail -c 1000 /logs/agent/solve.txt >&2; echo "cwm: solution/solve.sh exited $s" >&2; exit 25; fi
  if g=$(git rev-parse --git-dir 2>/dev/null) && git rev-parse -q --verify HEAD >/dev/null; then
    cp "$g/index" /tmp/cwm-harbor-index 2>/dev/null
    GIT_INDEX_FILE=/tmp/cwm-harbor-index git add -A >/dev/null 2>&1 && GIT_INDEX_FILE=/tmp/cwm-harbor-index git diff --cached --binary HEAD > /tmp/cwm-harbor-gold.diff
  fi
elif [ -s /tmp/cwm-import-candidate.diff ]; then
  git apply --whitespace=nowarn /tmp/cwm-import-candidate.diff 2>&1 || { echo "cwm: the patch does not apply" >&2; exit 23; }
fi
cp -a ` + HarborStage + `/tests /tests
bash /tests/test.sh
echo "cwm: tests/test.sh exited $?"
`

// HarborRun is one grading run of a Harbor task (HarborIn).
type HarborRun struct {
	// Reward is what the verifier wrote; OK says it wrote one.
	Reward float64
	OK     bool
	// Gold is the gold run's change of the working directory, as a patch.
	Gold string
	// Problem says why the run could not grade (exit 20-25 of the
	// script: no working directory, the patch does not apply, solve.sh
	// failed, the tests were stopped).
	Problem string
	Log     string
}

// harborTest is the one test a Harbor task's grade reports: its
// verifier script, passing when it writes reward 1.
const harborTest = "tests/test.sh"

// gradeHarbor is Grade's part for a Harbor task: tests/test.sh with the
// patch applied, resolved when it writes reward 1. An empty patch is
// graded too (Harbor has no FAIL_TO_PASS saying it fails).
func gradeHarbor(ctx context.Context, sbs *env.Sandboxes, e *env.Env, t *task.Task, patch string, r Result) (Result, error) {
	start := time.Now()
	sb, err := sbs.Open(ctx, e)
	if err != nil {
		return r, fmt.Errorf("grade %s: %w", t.InstanceID, err)
	}
	defer sb.Close()
	run, err := HarborIn(ctx, sb, t, t.Imported.Env, false, patch)
	if err != nil {
		return r, err
	}
	r.Seconds.Tests = time.Since(start).Seconds()
	r.Apply = ApplyGit
	if strings.TrimSpace(patch) == "" {
		r.Apply = ApplyEmpty
	}
	switch {
	case run.Problem == "the patch does not apply":
		r.Apply, r.ApplyLog, r.Reason = ApplyFailed, capText(run.Log), run.Problem
		return r, nil
	case run.Problem != "" && !strings.HasPrefix(run.Problem, "the tests were stopped"):
		return r, fmt.Errorf("grade %s: %w: %s", t.InstanceID, ErrTask, run.Problem)
	case run.Problem != "":
		r.TestNote = run.Problem
	case !run.OK:
		r.TestNote = "tests/test.sh wrote no /logs/verifier/reward.txt or reward.json"
	}
	o := testrun.Fail
	if run.OK && run.Reward >= 1 {
		o, r.Resolved = testrun.Pass, true
	}
	r.Tests = []TestOutcome{{ID: harborTest, Set: "FAIL_TO_PASS", Outcome: string(o)}}
	if !r.Resolved {
		r.Reason = fmt.Sprintf("%s: reward %s", harborTest, strconv.FormatFloat(run.Reward, 'g', -1, 64))
	}
	return r, nil
}

// readReward reads the verifier's reward: reward.txt (a number), else
// reward.json's "reward", as Harbor's verifier reads them.
func readReward(ctx context.Context, sb *sandbox.Sandbox) (float64, bool, string) {
	if b, err := sb.ReadFile(ctx, "/logs/verifier/reward.txt", 4<<10); err == nil {
		v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		if err != nil {
			return 0, false, fmt.Sprintf("/logs/verifier/reward.txt holds %.40q, not a number", b)
		}
		return v, true, ""
	}
	b, err := sb.ReadFile(ctx, "/logs/verifier/reward.json", 64<<10)
	if err != nil {
		return 0, false, ""
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return 0, false, fmt.Sprintf("/logs/verifier/reward.json is not a JSON object: %v", err)
	}
	v, ok := m["reward"].(float64)
	if !ok {
		return 0, false, "/logs/verifier/reward.json has no number \"reward\""
	}
	return v, true, ""
}
