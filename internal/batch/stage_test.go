package batch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/jsonl"
	"cwm/internal/shard"
)

// errFlaky stands for a model server failing an item after its retries.
var errFlaky = errors.New("flaky")

type squareLine struct {
	ID string `json:"id"`
	Sq int    `json:"sq"`
}

var squareStage = Stage{Name: "square", LineKey: jsonl.Field("id")}

// squareJob squares items into out; the items in flaky fail with errFlaky,
// which it sets aside.
func squareJob(out string, part shard.Shard, flaky map[int]bool) Job[int, squareLine] {
	key := func(i int) string { return strconv.Itoa(i) }
	return Job[int, squareLine]{Stage: &squareStage, Items: ints(10), Key: key, Out: out, Shard: part,
		Inputs: []string{"in.jsonl", ""}, Params: []string{"samples", "1"}, Workers: 3,
		Do: func(_ context.Context, _ int, i int) (squareLine, error) {
			if flaky[i] {
				return squareLine{}, errFlaky
			}
			return squareLine{key(i), i * i}, nil
		},
		Outcome: func(l squareLine) string { return "even" + strconv.FormatBool(l.Sq%2 == 0) },
		Aside: func(_ int, err error) string {
			if errors.Is(err, errFlaky) {
				return "model_error"
			}
			return ""
		},
	}
}

// RunStage resumes from the output, sets aside what Aside takes, and
// writes the shard's marker only when every item of the shard is in the
// output; an earlier marker is gone as soon as a run starts.
func TestRunStage(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	out := filepath.Join(dir, "out.jsonl")
	part := shard.Shard{Index: 1, Count: 2}
	var mine []int
	for _, i := range ints(10) {
		if part.Has(strconv.Itoa(i)) {
			mine = append(mine, i)
		}
	}
	if len(mine) < 2 {
		t.Fatalf("shard 1/2 of 10 items has %d items, want two or more", len(mine))
	}
	if err := os.WriteFile(MarkerPath(out), []byte(`{"stage":"square","shard":"1/2"}`), 0o644); err != nil {
		t.Fatal(err)
	}

	run, err := RunStage(context.Background(), squareJob(out, part, map[int]bool{mine[0]: true}))
	if err != nil {
		t.Fatalf("RunStage with a flaky item: %v", err)
	}
	if run.SetAside != 1 || run.Plan.Resumed() != 0 || run.Tally.Get("model_error") != 1 || run.Tally.Total() != len(mine) {
		t.Errorf("first run: set aside %d, resumed %d, tally %v; want 1, 0, %d outcomes with one model_error",
			run.SetAside, run.Plan.Resumed(), run.Tally, len(mine))
	}
	if m, err := ReadMarker(out); m != nil || err != nil {
		t.Errorf("ReadMarker after a run with an item set aside = %v, %v; want none", m, err)
	}

	run, err = RunStage(context.Background(), squareJob(out, part, nil))
	if err != nil {
		t.Fatalf("RunStage again: %v", err)
	}
	if run.SetAside != 0 || run.Plan.Resumed() != len(mine)-1 || len(run.Plan.Todo) != 1 {
		t.Errorf("second run: set aside %d, resumed %d, todo %d; want 0, %d, 1", run.SetAside, run.Plan.Resumed(), len(run.Plan.Todo), len(mine)-1)
	}
	m, err := ReadMarker(out)
	if err != nil || m == nil {
		t.Fatalf("ReadMarker after the complete run = %v, %v", m, err)
	}
	want := Marker{Stage: "square", Shard: "1/2", Inputs: []string{filepath.Join(dir, "in.jsonl")},
		Params: map[string]string{"samples": "1"}, Items: len(mine), Finished: m.Finished}
	if diff := cmp.Diff(want, *m); diff != "" {
		t.Errorf("marker (-want +got):\n%s", diff)
	}
	got := map[string]bool{}
	err = jsonl.ScanInput(out, func(_ int, line []byte) error {
		k, err := squareStage.LineKey(line)
		got[k] = true
		return err
	})
	if err != nil || len(got) != len(mine) {
		t.Errorf("output has keys %v (%v), want the %d of shard 1/2", got, err, len(mine))
	}
}

// An error Aside does not take ends the run, and leaves no marker.
func TestRunStageError(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.jsonl")
	all := map[int]bool{}
	for _, i := range ints(10) {
		all[i] = true
	}
	j := squareJob(out, shard.Shard{Index: 0, Count: 2}, all)
	j.Aside = nil
	if _, err := RunStage(context.Background(), j); !errors.Is(err, errFlaky) {
		t.Errorf("RunStage with failing items = %v, want %v", err, errFlaky)
	}
	if m, err := ReadMarker(out); m != nil || err != nil {
		t.Errorf("ReadMarker after a failed run = %v, %v; want none", m, err)
	}
}

// A Job with a Plan runs that plan's items to do, not Items resumed from
// Out again, and the marker counts the plan's shard.
func TestRunStagePlan(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.jsonl")
	j := squareJob(out, shard.Shard{Index: 0, Count: 2}, nil)
	plan := NewPlan(j.Items, j.Key, j.Shard, map[string]bool{}, InOrder)
	if len(plan.Todo) < 2 {
		t.Fatalf("shard 0/2 of 10 items has %d items, want two or more", len(plan.Todo))
	}
	plan.Todo = plan.Todo[:1]
	j.Plan = &plan
	run, err := RunStage(context.Background(), j)
	if err != nil || run.Tally.Total() != 1 {
		t.Fatalf("RunStage with a plan of one item to do = %v, %d outcomes; want 1", err, run.Tally.Total())
	}
	m, err := ReadMarker(out)
	if err != nil || m == nil || m.Items != len(plan.Mine) {
		t.Errorf("ReadMarker = %+v, %v; want %d items", m, err, len(plan.Mine))
	}
}
