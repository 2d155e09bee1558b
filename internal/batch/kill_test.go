package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"cwm/internal/jsonl"
	"cwm/internal/shard"
)

// killItems is how many items the stage of the kill test has.
const killItems = 300

// runStage is a batch stage as cwm's are written: plan from the output,
// run, write one line per finished item. Item i takes i%7 milliseconds.
func runStage(ctx context.Context, out string) error {
	key := func(i int) string { return strconv.Itoa(i) }
	plan, err := Resume(Spec[int]{Items: ints(killItems), Key: key, Out: out, OutKey: jsonl.Field("id"),
		Shard: shard.All, Order: UnfinishedLast})
	if err != nil {
		return err
	}
	w, err := jsonl.Append(out)
	if err != nil {
		return err
	}
	defer w.Close()
	return Run(ctx, plan.Todo, Options[int]{Workers: 4},
		func(ctx context.Context, _ int, i int) (int, error) {
			time.Sleep(time.Duration(i%7) * time.Millisecond)
			return i * i, nil
		},
		func(i, sq int, err error) error {
			if err != nil {
				return err
			}
			return w.Write(map[string]any{"id": key(i), "square": sq})
		})
}

// TestStageChild is the stage process the kill test kills: the test
// binary re-executed.
func TestStageChild(t *testing.T) {
	out := os.Getenv("CWM_BATCH_CHILD")
	if out == "" {
		t.Skip("only run as the kill test's child")
	}
	if err := runStage(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	os.Exit(0)
}

// TestKillAndResume kills a stage with SIGKILL twice in the middle of its
// run, leaves a torn line as a crash inside write(2) would, and resumes
// it: in the end every item has exactly one line, none is torn, and each
// resumed run starts with items no earlier run had begun.
func TestKillAndResume(t *testing.T) {
	out := t.TempDir() + "/out.jsonl"
	lines := func() int {
		b, _ := os.ReadFile(out)
		return bytes.Count(b, []byte("\n"))
	}
	child := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStageChild$")
		cmd.Env = append(os.Environ(), "CWM_BATCH_CHILD="+out)
		return cmd
	}
	for _, after := range []int{30, 120} {
		before := lines()
		cmd := child()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for lines() < after && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		n := lines()
		if n < after || n >= killItems {
			t.Fatalf("killed with %d lines, want between %d and %d", n, after, killItems)
		}
		if before > 0 {
			// The resumed run's first line is an item after the last one
			// the killed run finished, not one it had in flight.
			first := readIDs(t, out)[before]
			if first <= lastBefore(t, out, before) {
				t.Errorf("the resumed run began with item %d, which the killed run may have had in flight", first)
			}
		}
		// A crash in the middle of a write leaves a torn last line.
		f, err := os.OpenFile(out, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(`{"id": "torn`)
		f.Close()
	}
	if b, err := child().CombinedOutput(); err != nil {
		t.Fatalf("final run: %v\n%s", err, b)
	}
	seen := map[int]int{}
	for _, id := range readIDs(t, out) {
		seen[id]++
	}
	for i := range killItems {
		if seen[i] != 1 {
			t.Errorf("item %d has %d lines, want 1", i, seen[i])
		}
	}
	if b, _ := os.ReadFile(out); len(b) == 0 || b[len(b)-1] != '\n' || len(seen) != killItems {
		t.Errorf("%d items in the output, want %d, ending in a newline", len(seen), killItems)
	}
}

// readIDs returns the ids of the complete lines of the file, in order.
func readIDs(t *testing.T, path string) []int {
	t.Helper()
	var ids []int
	err := jsonl.Scan(path, func(n int, line []byte) error {
		var l struct{ ID string }
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("line %d does not parse: %v", n, err)
		}
		id, err := strconv.Atoi(l.ID)
		if err != nil {
			t.Fatalf("line %d: id %q", n, l.ID)
		}
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// lastBefore is the largest id among the first n lines.
func lastBefore(t *testing.T, path string, n int) int {
	last := -1
	for _, id := range readIDs(t, path)[:n] {
		last = max(last, id)
	}
	return last
}
