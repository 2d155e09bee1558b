package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cwm/internal/agent"
	"cwm/internal/agent/agenttest"
	"cwm/internal/jsonl"
)

// forageFixture is a CWM_HOME holding one environment (the agenttest calc
// repository, as env build would lay it out) and a tasks file with the
// given ids, all on that environment with the same bug.
func forageFixture(t *testing.T, ids ...string) (home, tasksFile string, gold string) {
	t.Helper()
	home = t.TempDir()
	layer, tk := agenttest.CalcRepo(t)
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
func solve(pause string) []agenttest.Reply {
	return []agenttest.Reply{
		agenttest.Tool("bash", "sleep "+pause+"; python3 test_calc.py 2>&1 | tail -1"),
		agenttest.Tool("edit", "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\ndef add(a, b):\n    return a + b\n>>>>>>> REPLACE"),
		agenttest.Tool("bash", "sleep "+pause+"; git diff > /tmp/fix.patch"),
		agenttest.Tool("submit", "/tmp/fix.patch"),
		agenttest.Text("## Issue Summary\nFixed add."),
	}
}

func readTrajectories(t *testing.T, path string) []agent.Trajectory {
	t.Helper()
	var out []agent.Trajectory
	if err := jsonl.Decode(path, func(_ int, tr agent.Trajectory) error {
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
	srv, err := agenttest.Start(func(r *agenttest.Request) agenttest.Reply {
		if strings.Contains(r.Issue(), "calc-down") {
			return agenttest.Reply{Status: 500}
		}
		return agenttest.ByIssue(map[string][]agenttest.Reply{"calc-ok": solve("0")}, agenttest.Text("?"))(r)
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "traj.jsonl")
	args := []string{"forage", "--tasks", tasksFile, "--out", out, "--model", "fake", "--base-url", srv.URL,
		"--samples", "2", "--concurrency", "3", "--retries", "1", "--seed", "7", "--temperature", "0.5",
		"--api-key-env", "FAKE_KEY", "--price-in", "1", "--price-out", "1", "--json", "--quiet", "--no-grade"}
	code, stdout, stderr := runCLI(t, "", args...)
	if code != 0 {
		t.Fatalf("cwm forage = %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var sum forageSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("summary %q: %v", stdout, err)
	}
	if sum.Episodes != 4 || sum.Ran != 4 || sum.ExitReasons["submitted"] != 2 || sum.ExitReasons["model_error"] != 2 ||
		sum.Submitted != 2 || sum.Retries.ServerError != 2 || sum.MeanTurns != 2.5 || sum.Cost == 0 || sum.ResolvedRate != nil {
		t.Errorf("summary = %+v, want 4 episodes: 2 submitted, 2 model errors after one 5xx retry each", sum)
	}
	trs := readTrajectories(t, out)
	if len(trs) != 4 {
		t.Fatalf("%d lines, want 4", len(trs))
	}
	for _, tr := range trs {
		switch {
		case tr.TaskID == "calc-ok" && (tr.ExitReason != agent.ExitSubmitted || tr.Patch != gold || tr.Turns != 5):
			t.Errorf("%s/%d: exit %q, %d turns, patch %q; want submitted after 5 turns with the gold patch", tr.TaskID, tr.Sample, tr.ExitReason, tr.Turns, tr.Patch)
		case tr.TaskID == "calc-down" && (tr.ExitReason != agent.ExitModelError || tr.Turns != 0):
			t.Errorf("%s/%d: exit %q after %d turns, want model_error", tr.TaskID, tr.Sample, tr.ExitReason, tr.Turns)
		}
		if tr.Model != "fake" || tr.Protocol != "cwm" || tr.EnvID != "calcenv" || len(tr.Messages) < 2 {
			t.Errorf("%s/%d: model %q protocol %q env %q, %d messages", tr.TaskID, tr.Sample, tr.Model, tr.Protocol, tr.EnvID, len(tr.Messages))
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

	// A second run finds everything done.
	n := len(srv.Requests())
	code, stdout, _ = runCLI(t, "", args...)
	if code != 0 || len(readTrajectories(t, out)) != 4 || len(srv.Requests()) != n {
		t.Errorf("re-run = %d, %d lines, %d new requests; want 0, 4 lines, none", code, len(readTrajectories(t, out)), len(srv.Requests())-n)
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Episodes != 4 || sum.Ran != 0 {
		t.Errorf("re-run summary = %+v (%v), want 4 episodes, none run", sum, err)
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

// TestForageChild is the cwm process TestForageKilled kills: the test
// binary re-executed, running the command line in CWM_FORAGE_CHILD.
func TestForageChild(t *testing.T) {
	args := os.Getenv("CWM_FORAGE_CHILD")
	if args == "" {
		t.Skip("only run as TestForageKilled's child")
	}
	var argv []string
	if err := json.Unmarshal([]byte(args), &argv); err != nil {
		t.Fatal(err)
	}
	os.Exit(Run(context.Background(), argv, os.Stdin, os.Stdout, os.Stderr))
}

// CWM forage must be resumable after SIGKILL at any moment: no duplicate,
// lost or torn lines once a re-run completes.
func TestForageKilled(t *testing.T) {
	ids := []string{"calc-a", "calc-b", "calc-c"}
	home, tasksFile, _ := forageFixture(t, ids...)
	replies := map[string][]agenttest.Reply{}
	for _, id := range ids {
		replies[id] = solve("0.1")
	}
	script := agenttest.ByIssue(replies, agenttest.Text("?"))
	srv, err := agenttest.Start(func(r *agenttest.Request) agenttest.Reply {
		rep := script(r)
		rep.Delay = 30 * time.Millisecond
		return rep
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "traj.jsonl")
	argv, _ := json.Marshal([]string{"forage", "--tasks", tasksFile, "--out", out, "--model", "fake", "--base-url", srv.URL,
		"--samples", "2", "--concurrency", "2", "--quiet", "--no-grade"})
	child := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestForageChild$")
		cmd.Env = append(os.Environ(), "CWM_HOME="+home, "CWM_FORAGE_CHILD="+string(argv))
		return cmd
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
		var tr agent.Trajectory
		if err := json.Unmarshal(line, &tr); err != nil {
			t.Errorf("line %d does not parse: %v", n, err)
			return nil
		}
		seen[pairKey(tr.TaskID, tr.Sample)]++
		if tr.ExitReason != agent.ExitSubmitted {
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
