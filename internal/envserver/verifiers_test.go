package envserver

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"cwm/internal/jsonl"
	"cwm/internal/model/modeltest"
	"cwm/internal/pytestenv"
	"cwm/internal/trajectory"
)

// verifiersConcurrent is how many rollouts TestVerifiersOpenEnv runs at
// once; BenchmarkVerifiersRollouts runs 64.
const verifiersConcurrent = 8

// verifiers 0.4.0's OpenEnv taskset (beside openenv-core 0.3.0: it cannot
// be installed beside openenv 0.10) runs whole rollouts against a real
// cwm serve with the scripted model, by task id and by the Task API's
// split and index, and the reward it records is the one cwm graded
// (testdata/verifiers_rollout.py says what of verifiers runs as released
// and why its engine's policy program does not).
func TestVerifiersOpenEnv(t *testing.T) {
	t.Parallel() // its venv is made beside the others on a cold cache
	checks := runVerifiers(t, verifiersConcurrent)
	checkSubtests(t, checks, "schema", "rollout_task_id", "rollout_split", "validation_error", "text_reply", "concurrent")
}

// BenchmarkVerifiersRollouts: 64 verifiers rollouts at once against one
// server (max sessions 64), with the checks of TestVerifiersOpenEnv; it
// reports the 64 rollouts' wall time.
func BenchmarkVerifiersRollouts(b *testing.B) {
	for range b.N {
		checks := runVerifiers(b, 64)
		r := checks["concurrent"]
		if !r.OK {
			b.Fatalf("concurrent: %s", r.Detail)
		}
		b.Log(r.Detail)
		var n int
		var secs float64
		if _, err := fmt.Sscanf(r.Detail, "%d rollouts in %g s", &n, &secs); err != nil {
			b.Fatalf("concurrent said %q: %v", r.Detail, err)
		}
		b.ReportMetric(secs, "rollouts-s")
	}
}

// verifiersModel scripts the model by the request's seed (the rollout's
// sample), replying with the JSON actions verifiers' parse_action turns
// into OpenEnv actions: even samples fix the bug and submit, odd ones
// submit a near miss (unresolved, but similar to the gold patch: reward
// 0 under cwm's mapping); 100 sends an action cwm refuses, 101 a reply in
// cwm's text protocol.
func verifiersModel(r *modeltest.Request) modeltest.Reply {
	seed := int64(0)
	if r.Seed != nil {
		seed = *r.Seed
	}
	action := func(tool, input string) modeltest.Reply {
		b, _ := json.Marshal(map[string]string{"tool": tool, "arguments": input})
		return modeltest.Text(string(b))
	}
	switch seed {
	case 100:
		return modeltest.Text(`{"bogus": 1}`)
	case 101:
		return modeltest.Text("<tool: bash>\nls\n</tool>")
	}
	edit := fixAdd
	if seed%2 == 1 {
		edit = strings.Replace(fixAdd, "return a + b", "return a - b - 0", 1)
	}
	return []modeltest.Reply{
		action("edit", edit),
		action("bash", "git diff > /tmp/fix.patch"),
		action("submit", "/tmp/fix.patch"),
	}[min(r.Turn(), 2)]
}

// runVerifiers runs testdata/verifiers_rollout.py against a server that
// writes its trajectories, checks that every reward verifiers recorded is
// the one cwm graded for that sample, and that once the rollouts are over
// no episode is open, no reset met CAPACITY_REACHED, and no sandbox is
// left beyond what the runtime keeps warm and the task's template.
func runVerifiers(t testing.TB, concurrent int) map[string]checkResult {
	py := pytestenv.Python(t, "testdata/pyreq/verifiers.txt")
	traj := filepath.Join(t.TempDir(), "traj.jsonl")
	f := newFixture(t, func(o *Options) { o.Trajectories, o.MaxSessions = traj, max(concurrent, 64) })
	model, err := modeltest.Start(verifiersModel, false)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	cfg, _ := json.Marshal(map[string]any{"url": f.url, "model_url": model.URL, "task_id": f.task.InstanceID,
		"split": "all", "concurrent": concurrent})
	checks := runChecks(t, f, py, "testdata/verifiers_rollout.py", string(cfg))

	graded := map[int]float64{}
	if err := jsonl.Decode(traj, func(_ int, tr trajectory.Trajectory) error {
		if tr.Reward != nil {
			graded[tr.Sample] = *tr.Reward
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for name, r := range checks {
		sample, ok := strings.CutPrefix(name, "reward_")
		if !ok {
			continue
		}
		seen++
		n, _ := strconv.Atoi(sample)
		got, _ := strconv.ParseFloat(r.Detail, 64)
		want, ok := graded[n]
		switch {
		case !ok:
			t.Errorf("sample %d: verifiers recorded reward %v; cwm graded no such sample", n, got)
		case got != want:
			t.Errorf("sample %d: verifiers recorded reward %v, cwm graded %v", n, got, want)
		case want != map[bool]float64{true: 1, false: 0}[n%2 == 0]:
			t.Errorf("sample %d: reward %v, want 1 for a fix and 0 for the near miss (cwm's shaping)", n, want)
		}
	}
	if want := 5 + concurrent; seen != want {
		t.Errorf("verifiers recorded %d rewards, want %d", seen, want)
	}

	waitFor(t, time.Minute, "no episode or connection left", func() bool {
		f.srv.mu.Lock()
		defer f.srv.mu.Unlock()
		return len(f.srv.entries) == 0 && len(f.srv.conns) == 0
	})
	if v := f.metric(`cwm_serve_errors_total{code="CAPACITY_REACHED"}`); v != "" && v != "0" {
		t.Errorf("CAPACITY_REACHED %s times", v)
	}
	if v := f.metric(`cwm_serve_sessions{kind="swe"}`); v != "0" {
		t.Errorf("cwm_serve_sessions{swe} = %q after the rollouts, want 0", v)
	}
	if v := f.metric(`cwm_serve_slots`); v != "0" {
		t.Errorf("cwm_serve_slots = %q after the rollouts, want 0", v)
	}
	// Closed sandboxes are reset in the background; what may stay is the
	// warm pool and the task's template.
	keep := fixtureWarm + 1
	runDirs := func() int {
		d, _ := filepath.Glob(filepath.Join(f.rtHome, "run", "p*", "*"))
		return len(d)
	}
	waitFor(t, time.Minute, fmt.Sprintf("at most %d sandbox run directories", keep), func() bool { return runDirs() <= keep })
	return checks
}
