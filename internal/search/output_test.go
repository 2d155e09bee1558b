package search

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/jsonl"
	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/trajectory"
)

// A task whose policy endpoint fails is recorded with its error, and the
// task searched before it stays written: its best trajectory, its tree,
// its summary entry.
func TestOutputKeepsFinishedTasks(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	// An earlier run's lines are dropped.
	if err := os.WriteFile(filepath.Join(dir, TreeFile), []byte("{\"stale\":true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	o := h.opts
	o.Algo, o.Width = Beam, 1
	res, err := Run(context.Background(), &o, h.task, h.env)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := out.Add(res); err != nil {
		t.Fatal(err)
	}

	down, err := modeltest.Start(func(*modeltest.Request) modeltest.Reply {
		return modeltest.Reply{Status: 500, Error: "the policy is down"}
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	if o.Policy, err = model.NewClient(model.ClientConfig{BaseURL: down.URL, Model: "policy", MaxRetries: -1}); err != nil {
		t.Fatal(err)
	}
	failed := *h.task
	failed.InstanceID = "calc-down"
	_, err = Run(context.Background(), &o, &failed, h.env)
	if err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("Run against a failing policy = %v, want its error", err)
	}
	if err := out.Fail(failed.InstanceID, o.Algo, err); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}

	var best []trajectory.Trajectory
	if err := jsonl.Decode(filepath.Join(dir, TrajectoriesFile), func(_ int, tr trajectory.Trajectory) error {
		best = append(best, tr)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(best) != 1 || best[0].TaskID != h.task.InstanceID {
		t.Errorf("trajectories %d, want the one of %s", len(best), h.task.InstanceID)
	}
	nodes := 0
	if err := jsonl.Decode(filepath.Join(dir, TreeFile), func(_ int, n Node) error {
		if n.TaskID != h.task.InstanceID {
			t.Errorf("tree line of task %q, want only %s", n.TaskID, h.task.InstanceID)
		}
		nodes++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if nodes != res.Summary.Nodes {
		t.Errorf("tree has %d lines, want the %d nodes", nodes, res.Summary.Nodes)
	}
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sums []Summary
	if err := json.Unmarshal(b, &sums); err != nil {
		t.Fatal(err)
	}
	if len(sums) != 2 || sums[0].Error != "" || sums[0].Nodes != res.Summary.Nodes || sums[1].TaskID != "calc-down" ||
		!strings.Contains(sums[1].Error, "500 Internal Server Error") {
		t.Errorf("summary = %+v, want the searched task then the failed one with its error", sums)
	}
	if got := out.Failed(); len(got) != 1 || got[0] != "calc-down" {
		t.Errorf("Failed() = %v, want [calc-down]", got)
	}
}
