package batch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// atEndJob squares every item into a list in the items' order, which
// AtEnd writes over out.
func atEndJob(out string, fail map[int]bool) Job[int, squareLine] {
	j := squareJob(out, shard.Shard{Index: 0, Count: 2}, fail)
	j.Aside = nil
	lines := make([]squareLine, 10)
	j.Write = func(w *jsonl.Writer, i int, l squareLine, err error) (string, error) {
		if w != nil {
			return "", errors.New("AtEnd job given a writer")
		}
		lines[i] = l
		return "done", err
	}
	j.AtEnd = func(out string) error {
		var mine []squareLine
		for i, l := range lines {
			if j.Shard.Has(strconv.Itoa(i)) {
				mine = append(mine, l)
			}
		}
		return jsonl.ReplaceWith(out, mine)
	}
	return j
}

// An AtEnd job does every item of its shard again, whatever Out holds,
// and replaces Out only when the run succeeds; with no Out it writes no
// file and no marker.
func TestRunStageAtEnd(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	old := []byte("{\"id\":\"0\",\"sq\":-1}\n")
	if err := os.WriteFile(out, old, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := RunStage(context.Background(), atEndJob(out, map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true})); !errors.Is(err, errFlaky) {
		t.Fatalf("RunStage with failing items = %v, want %v", err, errFlaky)
	}
	if got, err := os.ReadFile(out); err != nil || string(got) != string(old) {
		t.Errorf("out after a failed run = %q, %v; want it as it was, %q", got, err, old)
	}
	if m, err := ReadMarker(out); m != nil || err != nil {
		t.Errorf("ReadMarker after a failed run = %v, %v; want none", m, err)
	}

	run, err := RunStage(context.Background(), atEndJob(out, nil))
	if err != nil {
		t.Fatalf("RunStage: %v", err)
	}
	if run.Plan.Resumed() != 0 {
		t.Errorf("AtEnd run resumed %d items from out, want none", run.Plan.Resumed())
	}
	var want []squareLine
	for _, i := range ints(10) {
		if (shard.Shard{Index: 0, Count: 2}).Has(strconv.Itoa(i)) {
			want = append(want, squareLine{strconv.Itoa(i), i * i})
		}
	}
	var got []squareLine
	err = jsonl.ScanInput(out, func(_ int, line []byte) error {
		var l squareLine
		got = append(got, l)
		return jsonl.Unmarshal(line, &got[len(got)-1])
	})
	if err != nil || len(want) == 0 {
		t.Fatalf("read %s: %v (%d lines wanted)", out, err, len(want))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("out (-want +got):\n%s", diff)
	}
	if m, err := ReadMarker(out); err != nil || m == nil || m.Items != len(want) {
		t.Errorf("ReadMarker = %+v, %v; want %d items", m, err, len(want))
	}

	t.Chdir(dir)
	if run, err := RunStage(context.Background(), atEndJob("", nil)); err != nil || run.Tally.Get("done") != len(want) {
		t.Fatalf("RunStage with no Out = %v, %d done; want %d", err, run.Tally.Get("done"), len(want))
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 2 {
		t.Errorf("files after a run with no Out = %v, %v; want out.jsonl and its marker only", ents, err)
	}
}

// A Drain job's first error stops the handing out of items, and the items
// running then finish and are written before the run returns the error.
func TestRunStageDrain(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.jsonl")
	j := squareJob(out, shard.Shard{}, map[int]bool{0: true})
	j.Aside = nil
	j.Drain = true
	release := make(chan struct{})
	do := j.Do
	j.Do = func(ctx context.Context, w int, i int) (squareLine, error) {
		if i != 0 {
			<-release // running when item 0 fails
		}
		return do(ctx, w, i)
	}
	j.Write = func(w *jsonl.Writer, i int, l squareLine, err error) (string, error) {
		if err != nil {
			close(release)
			return "", err
		}
		return "written", w.Write(l)
	}
	run, err := RunStage(context.Background(), j)
	if !errors.Is(err, errFlaky) {
		t.Fatalf("RunStage with a failing item = %v, want %v", err, errFlaky)
	}
	var got []string
	err = jsonl.ScanInput(out, func(_ int, line []byte) error {
		k, err := squareStage.LineKey(line)
		got = append(got, k)
		return err
	})
	slices.Sort(got)
	if diff := cmp.Diff([]string{"1", "2"}, got); err != nil || diff != "" {
		t.Errorf("output keys (-want +got), %v:\n%s", err, diff)
	}
	if run.Tally.Get("written") != 2 {
		t.Errorf("tally %v, want the 2 items that were running written", run.Tally)
	}
}

// A Stream job's worker writes its item's lines as it goes, each before
// the item's own line, counted in the tally; the marker is written as
// for Do; Stream cannot go with AtEnd.
func TestRunStageStream(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.jsonl")
	j := squareJob(out, shard.Shard{Index: 1, Count: 2}, nil)
	do := j.Do
	j.Do = nil
	j.Stream = func(ctx context.Context, w int, i int, emit func(any, string) error) (squareLine, error) {
		for k := range 2 {
			if err := emit(squareLine{strconv.Itoa(i) + "/part-" + strconv.Itoa(k), i}, "part"); err != nil {
				return squareLine{}, err
			}
		}
		return do(ctx, w, i)
	}
	run, err := RunStage(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string]int{} // an item's parts seen before its own line
	err = jsonl.ScanInput(out, func(n int, line []byte) error {
		k, err := squareStage.LineKey(line)
		if item, _, ok := strings.Cut(k, "/"); ok {
			parts[item]++
		} else if parts[k] != 2 {
			t.Errorf("line %d, item %s's own line, comes after %d of its 2 parts", n, k, parts[k])
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	mine := len(run.Plan.Mine)
	if got := run.Tally.Get("part"); mine == 0 || got != 2*mine || run.Tally.Total() != 3*mine || len(parts) != mine {
		t.Errorf("tally %v, items with parts %d; want 2 parts and a line for each of the shard's %d items", run.Tally, len(parts), mine)
	}
	if m, err := ReadMarker(out); m == nil || err != nil {
		t.Errorf("ReadMarker after a complete run = %v, %v", m, err)
	}
	j.AtEnd = func(string) error { return nil }
	if _, err := RunStage(context.Background(), j); err == nil {
		t.Error("RunStage with Stream and AtEnd: no error")
	}
}

// An Unmarked job leaves the shard's marker alone, an earlier one
// included: its caller marks the shard (trace repo, after its spool).
func TestRunStageUnmarked(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	out := filepath.Join(dir, "out.jsonl")
	earlier := []byte(`{"stage":"square","shard":"1/2"}`)
	if err := os.WriteFile(MarkerPath(out), earlier, 0o644); err != nil {
		t.Fatal(err)
	}
	j := squareJob(out, shard.Shard{Index: 1, Count: 2}, nil)
	j.Unmarked = true
	run, err := RunStage(context.Background(), j)
	if err != nil || run.Tally.Total() != len(run.Plan.Mine) || len(run.Plan.Mine) == 0 {
		t.Fatalf("RunStage unmarked = %v outcomes of %d items, %v; want one per item", run.Tally, len(run.Plan.Mine), err)
	}
	got, err := os.ReadFile(MarkerPath(out))
	if err != nil || string(got) != string(earlier) {
		t.Errorf("marker after an unmarked run = %q, %v; want %q untouched", got, err, earlier)
	}
}
