package export

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeTrajectories writes trajectories of repos × per samples, each of
// turns turns, and returns the file.
func writeTrajectories(t *testing.T, dir string, repos, per, turns int) string {
	t.Helper()
	path := filepath.Join(dir, "traj.jsonl")
	var b strings.Builder
	for r := range repos {
		for s := range per {
			tr := synthTrajectory(fmt.Sprintf("owner%d__repo%d-%d", r, r, s), turns)
			tr.Sample = s
			// Distinct actions, so that dedup keeps every one.
			for i := range tr.Messages {
				tr.Messages[i].Content += fmt.Sprintf(" repository %d sample %d message %d of a longer text", r, s, i)
			}
			data, err := json.Marshal(tr)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(data)
			b.WriteByte('\n')
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readRows[R any](t *testing.T, path string) []R {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []R
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r R
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}

// TestSplitByRepo: with eval=0.2 over 100 repositories of 3 samples, no
// repository is in both files, every row is in one, about a fifth of the
// repositories are in eval, and the same seed splits the same way.
func TestSplitByRepo(t *testing.T) {
	dir := t.TempDir()
	in := writeTrajectories(t, dir, 100, 3, 2)
	split := func(out string, seed uint64) (train, eval []SFTRow) {
		sum, err := Run(context.Background(), Options{Kind: SFT, In: []string{in}, Out: out, Format: JSONL, EvalShare: 0.2, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if len(sum.Files) != 2 || sum.Files[0].Path != filepath.Join(out, "train.jsonl") || sum.Files[1].Path != filepath.Join(out, "eval.jsonl") {
			t.Fatalf("files %+v, want train.jsonl and eval.jsonl in %s", sum.Files, out)
		}
		return readRows[SFTRow](t, sum.Files[0].Path), readRows[SFTRow](t, sum.Files[1].Path)
	}
	train, eval := split(filepath.Join(dir, "a"), 5)
	if len(train)+len(eval) != 300 {
		t.Fatalf("%d train and %d eval rows, want 300 in all", len(train), len(eval))
	}
	repos := map[string]string{}
	for name, rows := range map[string][]SFTRow{"train": train, "eval": eval} {
		for _, r := range rows {
			if other, ok := repos[r.Repo]; ok && other != name {
				t.Fatalf("repository %s is in both train and eval", r.Repo)
			}
			repos[r.Repo] = name
		}
	}
	// 100 coins of 0.2: 20 ± 4; the bounds are 3 standard deviations.
	evalRepos := len(eval) / 3
	if evalRepos < 8 || evalRepos > 32 {
		t.Errorf("%d of 100 repositories in eval, want about 20", evalRepos)
	}
	train2, eval2 := split(filepath.Join(dir, "b"), 5)
	if d := cmp.Diff(eval, eval2); d != "" || len(train) != len(train2) {
		t.Errorf("the same seed split differently:\n%s", d)
	}
	card, err := os.ReadFile(filepath.Join(dir, "a", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"path: train.jsonl", "path: eval.jsonl", fmt.Sprintf("num_examples: %d", len(eval))} {
		if !strings.Contains(string(card), want) {
			t.Errorf("the card has no %q:\n%s", want, card)
		}
	}
}

// TestDedupAndDecontamination: near-duplicates of a kept trajectory of
// the same repository are left out (internal/dedup's rule), the same
// actions in another repository are kept, and every record of an
// excluded repository is left out with its reason.
func TestDedupAndDecontamination(t *testing.T) {
	dir := t.TempDir()
	base := synthTrajectory("acme__web-1", 4)
	var lines []string
	add := func(task string, sample int) {
		tr := *base
		tr.TaskID, tr.Sample = task, sample
		data, err := json.Marshal(&tr)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(data))
	}
	add("acme__web-1", 0)
	add("acme__web-1", 1) // a duplicate of the first
	add("acme__web-2", 0) // a duplicate of the first, another task of its repository
	add("other__lib-1", 0)
	add("django__django-11099", 0)
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exclude := func(repo string) error {
		if repo == "django/django" {
			return fmt.Errorf("decontamination: %s is excluded", repo)
		}
		return nil
	}
	out := filepath.Join(dir, "out.jsonl")
	sum, err := Run(context.Background(), Options{Kind: Triplets, In: []string{in}, Out: out, Dedup: 0.5, Exclude: exclude})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range readRows[TripletRow](t, out) {
		if r.Turn == 1 {
			ids = append(ids, r.ID)
		}
	}
	if d := cmp.Diff([]string{"acme__web-1#0#1", "other__lib-1#0#1"}, ids); d != "" {
		t.Errorf("trajectories exported (-want +got):\n%s", d)
	}
	if sum.Duplicates != 2 || sum.Excluded != 1 || sum.ExcludedRepos["django/django"] == "" {
		t.Errorf("summary %+v, want 2 duplicates and django/django excluded", sum)
	}
}

// TestTripletState: a state over its bound keeps the prompt and the
// latest turns that fit, starting at an agent's turn, and counts what it
// left out; unbounded, it is the whole conversation before the action.
func TestTripletState(t *testing.T) {
	tr := synthTrajectory("acme__web-1", 6)
	tr.Messages = append(tr.Messages, tr.Messages[2]) // a last reply nothing answered
	all := tripletRows(tr, "acme/web", 0)
	if len(all) != 6 {
		t.Fatalf("%d triplets of 6 answered turns (and a last reply), want 6", len(all))
	}
	last := all[5]
	if len(last.State) != 12 || last.StateDropped != 0 || last.Turn != 6 || len(last.Observation) != 1 {
		t.Errorf("unbounded last triplet: %d state messages, %d dropped, turn %d; want 12, 0, turn 6", len(last.State), last.StateDropped, last.Turn)
	}
	// Each turn is about 50 bytes (call and output); 150 bytes hold the
	// prompt (10 bytes) and the last turn or two, never half of one.
	bounded := tripletRows(tr, "acme/web", 150)[5]
	n := 0
	for _, m := range bounded.State {
		n += len(m.Content)
	}
	if n > 150 || bounded.StateDropped == 0 || bounded.State[0].Role != "system" || bounded.State[1].Role != "user" || bounded.State[2].Role != "assistant" {
		t.Errorf("bounded state %+v (%d bytes, %d dropped): want the prompt, then a tail from an assistant message, within 150 bytes", bounded.State, n, bounded.StateDropped)
	}
	if got := len(bounded.State) + int(bounded.StateDropped); got != 12 {
		t.Errorf("kept %d + dropped %d = %d messages, want 12", len(bounded.State), bounded.StateDropped, got)
	}
}
