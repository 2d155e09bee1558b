package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"cwm/internal/agent"
	"cwm/internal/episode/episodetest"
	"cwm/internal/jsonl"
	"cwm/internal/model/modeltest"
	"cwm/internal/trajectory"
)

// forageFixture is a CWM_HOME holding one environment (the agenttest calc
// repository, as env build would lay it out) and a tasks file with the
// given ids, all on that environment with the same bug.
func forageFixture(t *testing.T, ids ...string) (home, tasksFile string, gold string) {
	t.Helper()
	home = t.TempDir()
	layer, tk := episodetest.CalcRepo(t)
	envDir := filepath.Join(home, "envs", "calcenv")
	if err := os.MkdirAll(envDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(layer, filepath.Join(envDir, "layer")); err != nil {
		t.Fatal(err)
	}
	manifest := `{"version": 1, "id": "calcenv", "name": "calc", "base": "host", "usable": true}`
	if err := os.WriteFile(filepath.Join(envDir, "env.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, id := range ids {
		tt := *tk
		tt.InstanceID, tt.EnvID = id, "calcenv"
		tt.ProblemStatement = "add(2, 3) returns -1 instead of 5 (task " + id + ")."
		b, _ := json.Marshal(tt)
		buf.Write(append(b, '\n'))
	}
	tasksFile = filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(tasksFile, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return home, tasksFile, tk.Patch
}

// solve is a scripted episode that fixes the calc bug and submits.
func solve(pause string) []modeltest.Reply {
	return []modeltest.Reply{
		modeltest.Tool("bash", "sleep "+pause+"; python3 test_calc.py 2>&1 | tail -1"),
		modeltest.Tool("edit", "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\ndef add(a, b):\n    return a + b\n>>>>>>> REPLACE"),
		modeltest.Tool("bash", "sleep "+pause+"; git diff > /tmp/fix.patch"),
		modeltest.Tool("submit", "/tmp/fix.patch"),
		modeltest.Text("## Issue Summary\nFixed add."),
	}
}

func readTrajectories(t *testing.T, path string) []trajectory.Trajectory {
	t.Helper()
	var out []trajectory.Trajectory
	if err := jsonl.Decode(path, func(_ int, tr trajectory.Trajectory) error {
		out = append(out, tr)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestForage(t *testing.T) {
	home, tasksFile, gold := forageFixture(t, "calc-ok", "calc-down")
	t.Setenv("CWM_HOME", home)
	t.Setenv("FAKE_KEY", "sk-forage")
	var down atomic.Bool // the server fails calc-down's requests while set
	down.Store(true)
	script := modeltest.ByIssue(map[string][]modeltest.Reply{"calc-ok": solve("0"), "calc-down": solve("0")}, modeltest.Text("?"))
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		if down.Load() && strings.Contains(r.Issue(), "calc-down") {
			return modeltest.Reply{Status: 500}
		}
		return script(r)
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "traj.jsonl")
	args := []string{"forage", "--tasks", tasksFile, "--out", out, "--model", "fake", "--base-url", srv.URL,
		"--samples", "2", "--concurrency", "3", "--retries", "1", "--seed", "7", "--temperature", "0.5",
		"--api-key-env", "FAKE_KEY", "--price-in", "1", "--price-out", "1", "--json", "--quiet", "--no-grade"}

	// The server fails both samples of calc-down: the run says so and exits
	// 1, and those episodes are kept apart from --out with their reason.
	code, stdout, stderr := runCLI(t, "", args...)
	if code != 1 || !strings.Contains(stderr, "the model server failed 2 of 4 episodes") || !strings.Contains(stderr, "run again to retry them") {
		t.Fatalf("cwm forage with the server failing = %d, want 1 and the count of model errors\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var sum agent.ForageSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("summary %q: %v", stdout, err)
	}
	if sum.Episodes != 2 || sum.Ran != 2 || sum.ModelErrors != 2 || sum.Failed != 0 || sum.ExitReasons["submitted"] != 2 ||
		sum.ExitReasons["model_error"] != 0 || sum.Submitted != 2 || sum.Retries.ServerError != 0 || sum.MeanTurns != 5 ||
		sum.Cost == 0 || sum.ResolvedRate != nil {
		t.Errorf("summary = %+v, want 2 submitted episodes in --out and 2 model errors", sum)
	}
	trs := readTrajectories(t, out)
	if len(trs) != 2 {
		t.Fatalf("%d lines in --out, want 2", len(trs))
	}
	for _, tr := range trs {
		if tr.TaskID != "calc-ok" || tr.ExitReason != trajectory.ExitSubmitted || tr.Patch != gold || tr.Turns != 5 {
			t.Errorf("%s/%d: exit %q, %d turns, patch %q; want calc-ok submitted after 5 turns with the gold patch", tr.TaskID, tr.Sample, tr.ExitReason, tr.Turns, tr.Patch)
		}
		if tr.Model != "fake" || tr.Protocol != "cwm" || tr.EnvID != "calcenv" || len(tr.Messages) < 2 {
			t.Errorf("%s/%d: model %q protocol %q env %q, %d messages", tr.TaskID, tr.Sample, tr.Model, tr.Protocol, tr.EnvID, len(tr.Messages))
		}
	}
	failed := readTrajectories(t, agent.ModelErrorsPath(out))
	if len(failed) != 2 {
		t.Fatalf("%d lines in %s, want 2", len(failed), agent.ModelErrorsPath(out))
	}
	for _, tr := range failed {
		if tr.TaskID != "calc-down" || tr.ExitReason != trajectory.ExitModelError || tr.Turns != 0 || tr.Retries.ServerError != 1 ||
			!strings.Contains(tr.Error, "500") {
			t.Errorf("%s/%d: exit %q after %d turns, %d 5xx retries, error %q; want calc-down model_error after one retry",
				tr.TaskID, tr.Sample, tr.ExitReason, tr.Turns, tr.Retries.ServerError, tr.Error)
		}
	}
	for _, r := range srv.Requests() {
		sample := 0
		if r.Seed != nil {
			sample = int(*r.Seed) - 7
		}
		if r.Seed == nil || sample < 0 || sample > 1 || *r.Temperature != 0.5 || r.Header.Get("Authorization") != "Bearer sk-forage" {
			t.Fatalf("request seed %v temperature %v auth %q; want seed 7+sample, 0.5, the key from FAKE_KEY", r.Seed, r.Temperature, r.Header.Get("Authorization"))
		}
	}

	// The server is back: a re-run runs the two failed episodes, and only
	// those.
	down.Store(false)
	code, stdout, stderr = runCLI(t, "", args...)
	if code != 0 {
		t.Fatalf("re-run = %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Episodes != 4 || sum.Ran != 2 || sum.ModelErrors != 0 || sum.ExitReasons["submitted"] != 4 {
		t.Errorf("re-run summary = %+v (%v), want 4 submitted episodes, 2 run now", sum, err)
	}
	trs = readTrajectories(t, out)
	seen := map[string]int{}
	for _, tr := range trs {
		seen[trajectory.Key(tr.TaskID, tr.Sample)]++
		if tr.ExitReason != trajectory.ExitSubmitted {
			t.Errorf("%s/%d ended %q after the re-run, want submitted", tr.TaskID, tr.Sample, tr.ExitReason)
		}
	}
	if len(trs) != 4 || len(seen) != 4 {
		t.Errorf("after the re-run %d lines for %d pairs, want 4 for 4: %v", len(trs), len(seen), seen)
	}

	// A third run finds everything done.
	n := len(srv.Requests())
	code, stdout, _ = runCLI(t, "", args...)
	if code != 0 || len(readTrajectories(t, out)) != 4 || len(srv.Requests()) != n {
		t.Errorf("third run = %d, %d lines, %d new requests; want 0, 4 lines, none", code, len(readTrajectories(t, out)), len(srv.Requests())-n)
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Episodes != 4 || sum.Ran != 0 {
		t.Errorf("third run summary = %+v (%v), want 4 episodes, none run", sum, err)
	}
}

// TestForageServerDown: when the server fails every episode, the run exits
// 1 and the text summary counts them; nothing is written to --out.
func TestForageServerDown(t *testing.T) {
	home, tasksFile, _ := forageFixture(t, "calc-1", "calc-2")
	t.Setenv("CWM_HOME", home)
	srv, err := modeltest.Start(func(*modeltest.Request) modeltest.Reply { return modeltest.Reply{Status: 503} }, false)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "traj.jsonl")
	code, stdout, stderr := runCLI(t, "", "forage", "--tasks", tasksFile, "--out", out, "--model", "fake", "--base-url", srv.URL,
		"--retries", "1", "--quiet", "--no-grade")
	if code != 1 || !strings.Contains(stderr, "the model server failed 2 of 2 episodes") ||
		!strings.Contains(stdout, "episodes     0 (0 run now, 0 could not run, 2 failed by the model server)") {
		t.Errorf("cwm forage against a failing server = %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if b, err := os.ReadFile(out); err != nil || len(b) != 0 {
		t.Errorf("--out = %q, %v; want an empty file", b, err)
	}
	if n := len(readTrajectories(t, agent.ModelErrorsPath(out))); n != 2 {
		t.Errorf("%d lines in %s, want 2", n, agent.ModelErrorsPath(out))
	}
}

func TestForageUsage(t *testing.T) {
	home, tasksFile, _ := forageFixture(t, "calc-1")
	t.Setenv("CWM_HOME", home)
	out := filepath.Join(t.TempDir(), "traj.jsonl")
	base := []string{"forage", "--tasks", tasksFile, "--out", out, "--model", "m", "--base-url", "http://127.0.0.1:1/v1"}
	cases := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"forage"}, 2, "are required"},
		{append(base, "--protocol", "xml"), 2, `unknown protocol "xml"`},
		{append(base, "--tool-role", "system"), 2, "want tool or user"},
		{append(base, "--shard", "2/2"), 2, "0 <= i < n"},
		{append(base, "--history", "rewrite"), 2, "want squash or amend"},
		{append(base, "--samples", "0"), 2, "at least 1"},
		{append(base, "--command-timeout", "10ms"), 2, "at least 1s"},
		{[]string{"forage", "--tasks", "/no/such.jsonl", "--out", out, "--model", "m", "--base-url", "http://x/v1"}, 1, "no such file"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(t, "", c.args...)
		if code != c.code || !strings.Contains(stderr, c.err) {
			t.Errorf("cwm %q = %d, %q; want %d and %q", c.args, code, stderr, c.code, c.err)
		}
	}
}

// CWM forage must be resumable after SIGKILL at any moment: no duplicate,
// lost or torn lines once a re-run completes.
func TestForageKilled(t *testing.T) {
	ids := []string{"calc-a", "calc-b", "calc-c"}
	home, tasksFile, _ := forageFixture(t, ids...)
	replies := map[string][]modeltest.Reply{}
	for _, id := range ids {
		replies[id] = solve("0.1")
	}
	script := modeltest.ByIssue(replies, modeltest.Text("?"))
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		rep := script(r)
		rep.Delay = 30 * time.Millisecond
		return rep
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "traj.jsonl")
	child := func() *exec.Cmd {
		return cliChild(t, home, "forage", "--tasks", tasksFile, "--out", out, "--model", "fake", "--base-url", srv.URL,
			"--samples", "2", "--concurrency", "2", "--quiet", "--no-grade")
	}
	lines := func() int {
		b, _ := os.ReadFile(out)
		return bytes.Count(b, []byte("\n"))
	}
	// Kill twice mid-run, once as the first episode may be writing its
	// line and once later, then let a third run finish.
	for _, after := range []int{1, 3} {
		cmd := child()
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for lines() < after && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if lines() < after {
			t.Fatalf("no progress before the kill: %d lines\n%s", lines(), errb.String())
		}
		if lines() >= 6 {
			t.Fatalf("the run finished before it could be killed (%d lines)", lines())
		}
	}
	cmd := child()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("final run: %v\n%s", err, b)
	}
	seen := map[string]int{}
	err = jsonl.Scan(out, func(n int, line []byte) error {
		var tr trajectory.Trajectory
		if err := json.Unmarshal(line, &tr); err != nil {
			t.Errorf("line %d does not parse: %v", n, err)
			return nil
		}
		seen[trajectory.Key(tr.TaskID, tr.Sample)]++
		if tr.ExitReason != trajectory.ExitSubmitted {
			t.Errorf("%s/%d ended %q", tr.TaskID, tr.Sample, tr.ExitReason)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	if len(seen) != 6 || lines() != 6 || b[len(b)-1] != '\n' {
		t.Errorf("%d distinct pairs in %d lines, want 6 in 6: %v", len(seen), lines(), seen)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("pair %q appears %d times", k, n)
		}
	}
}
