package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/golden"
	"cwm/internal/search"
	"cwm/internal/trajectory"

	"github.com/google/go-cmp/cmp"
)

// A search output directory, written by search.Output: a task resolved
// by the real grading, one the reward model predicted resolved on the
// sim backend, one failed. Its totals, its table (golden) and the page's
// section.
func TestSearchSection(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	out, err := search.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	one, yes := 1.0, true
	graded := &trajectory.Trajectory{TaskID: "a-1", ExitReason: trajectory.ExitSubmitted}
	graded.SetGrade(trajectory.Grade{Reward: &one, Resolved: &yes})
	predicted := &trajectory.Trajectory{TaskID: "a-2", ExitReason: trajectory.ExitSubmitted,
		Sim: &trajectory.SimSummary{Backend: "sim", PredictedReward: &one}}
	for _, res := range []*search.Result{
		{Best: graded, Tree: []search.Node{{TaskID: "a-1", Parent: -1}, {TaskID: "a-1", ID: 1, Depth: 1}, {TaskID: "a-1", ID: 2, Parent: 1, Depth: 2}},
			Summary: search.Summary{TaskID: "a-1", Algo: search.MCTS, Nodes: 3, MaxDepth: 2, ModelCalls: 5, ValueCalls: 2, Execs: 6, Gradings: 1, BestNode: 2, BestReward: &one}},
		{Best: predicted, Tree: []search.Node{{TaskID: "a-2", Parent: -1}, {TaskID: "a-2", ID: 1, Depth: 1}},
			Summary: search.Summary{TaskID: "a-2", Algo: search.MCTS, Nodes: 2, MaxDepth: 1, ModelCalls: 4, ValueCalls: 1, Execs: 2,
				ExecsAvoided: 3, WorldModelCalls: 3, RewardCalls: 1, Exhausted: "model_calls", BestNode: 1, BestReward: &one}},
	} {
		if err := out.Add(res); err != nil {
			t.Fatal(err)
		}
	}
	if err := out.Fail("a-3", search.MCTS, errors.New("ask the policy: 500 Internal Server Error")); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}

	r, err := Build("search", []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Search) != 1 || len(r.Inputs) != 1 || r.Inputs[0].Kind != KindSearch {
		t.Fatalf("Build(%s): %d search sections, inputs %+v; want one search", dir, len(r.Search), r.Inputs)
	}
	sec := r.Search[0]
	want := SearchTotals{Tasks: 3, Failed: 1, Exhausted: 1, Nodes: 5, MaxDepth: 2, ModelCalls: 9, ValueCalls: 3, Execs: 8,
		ExecsAvoided: 3, WorldModelCalls: 3, Gradings: 1, Resolved: 1, ResolvedRate: 1.0 / 3, PredictedResolved: 1}
	if diff := cmp.Diff(want, sec.Total); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	if sec.TreeLines != 5 {
		t.Errorf("tree lines %d, want 5", sec.TreeLines)
	}
	golden.Check(t, "testdata/search.txt", strings.ReplaceAll(sec.Text(), dir, "DIR"))
	var page strings.Builder
	if err := Render(&page, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `id="search"`) || !strings.Contains(page.String(), "executions avoided") {
		t.Errorf("the page has no search section")
	}
}

// A directory without a search summary is no search: Build says what it
// could not read.
func TestSearchSectionBadInput(t *testing.T) {
	dir := t.TempDir()
	if IsSearchDir(dir) {
		t.Errorf("IsSearchDir(%s) = true for an empty directory", dir)
	}
	if err := os.WriteFile(filepath.Join(dir, search.SummaryFile), []byte(`{"task_id": "a"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Build("bad", []string{dir})
	if err == nil || !strings.Contains(err.Error(), "not a search summary") {
		t.Errorf("Build over a summary that is not an array = %v, want an error saying so", err)
	}
}
