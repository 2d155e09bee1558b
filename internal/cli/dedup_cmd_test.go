package cli

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/dedup"
)

// synthTrajectories makes trajectories of three repositories with planted
// near-duplicates: variants of a base trajectory with a growing share of
// its actions rewritten, so that some land above the threshold and some
// below. It returns the lines and, for the oracle, each line's group and
// text as the command must see them.
func synthTrajectories(seed uint64) (lines []map[string]any, items []dedup.Item, planted int) {
	r := rand.New(rand.NewPCG(seed, seed))
	vocab := make([]string, 300)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%d", i)
	}
	action := func() string {
		words := make([]string, 5+r.IntN(6))
		for i := range words {
			words[i] = vocab[r.IntN(len(vocab))]
		}
		return strings.Join(words, " ")
	}
	// Each repository is named a different way: a repo field, a SWE-bench
	// task id, a cwm-style task id.
	repos := []struct {
		group string
		line  func(n int) map[string]any
	}{
		{"acme/web", func(n int) map[string]any {
			return map[string]any{"task_id": fmt.Sprintf("t-%d", n), "repo": "acme/web"}
		}},
		{"acme/db", func(n int) map[string]any { return map[string]any{"task_id": fmt.Sprintf("acme__db-%d", n)} }},
		{"textkit-mut", func(n int) map[string]any { return map[string]any{"instance_id": fmt.Sprintf("textkit-mut-%04d", n)} }},
	}
	add := func(g int, actions []string, asMessages bool) {
		l := repos[g].line(len(lines))
		l["sample"] = len(lines) % 4
		if asMessages {
			var msgs []any
			for _, a := range actions {
				msgs = append(msgs, map[string]any{"role": "user", "content": "ok"}, map[string]any{"role": "assistant", "content": a})
			}
			l["messages"] = msgs
		} else {
			var steps []any
			for _, a := range actions {
				steps = append(steps, map[string]any{"action": a, "observation": "out " + action()})
			}
			l["steps"] = steps
		}
		lines = append(lines, l)
		items = append(items, dedup.Item{ID: fmt.Sprint(len(items)), Group: repos[g].group, Text: strings.Join(actions, "\n")})
	}
	var bases [][]string
	for i := 0; i < 45; i++ {
		g := i % len(repos)
		base := make([]string, 30)
		for j := range base {
			base[j] = action()
		}
		bases = append(bases, base)
		add(g, base, i%5 == 0)
		if i%2 == 0 {
			for _, share := range []float64{0.05, 0.15, 0.3, 0.5} {
				v := append([]string{}, base...)
				for j := range v {
					if r.Float64() < share {
						v[j] = action()
					}
				}
				add(g, v, r.IntN(3) == 0)
				planted++
			}
		}
	}
	// The same actions in another repository are no duplicate.
	add(1, bases[0], false)
	// Shuffle, so that variants may come before their base.
	r.Shuffle(len(lines), func(i, j int) {
		lines[i], lines[j] = lines[j], lines[i]
		items[i], items[j] = items[j], items[i]
	})
	for i := range items {
		items[i].ID = fmt.Sprint(i) // the line's index, as the command numbers them
	}
	return lines, items, planted
}

func TestDedupCommand(t *testing.T) {
	dir := t.TempDir()
	lines, items, planted := synthTrajectories(7)
	in := filepath.Join(dir, "traj.jsonl")
	writeJSONL(t, in, func() []any {
		var out []any
		for _, l := range lines {
			out = append(out, l)
		}
		return out
	}()...)
	inLines := strings.Split(strings.TrimSuffix(mustRead(t, in), "\n"), "\n")

	kept, dropped, err := dedup.ExactDedup(items, dedup.Options{Threshold: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d lines, %d planted variants; the exact rule drops %d", len(lines), planted, len(dropped))
	if len(dropped) == 0 || len(dropped) >= planted {
		t.Fatalf("the planted set drops %d of %d variants; want some, not all", len(dropped), planted)
	}
	var want []string
	for _, i := range kept {
		want = append(want, inLines[i])
	}

	out, droppedFile := filepath.Join(dir, "kept.jsonl"), filepath.Join(dir, "dropped.jsonl")
	code, stdout, stderr := runCommand(t, &dedupCmd{}, "--in", in, "--out", out, "--dropped", droppedFile)
	if code != 0 {
		t.Fatalf("cwm dedup = %d\n%s%s", code, stdout, stderr)
	}
	// Kept lines are the exact rule's, unchanged, in input order.
	got := strings.Split(strings.TrimSuffix(mustRead(t, out), "\n"), "\n")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kept lines differ from ExactDedup's (-want +got):\n%s", diff)
	}
	wantHead := fmt.Sprintf("kept %d of %d lines (%d dropped) in 3 groups by repo", len(kept), len(lines), len(dropped))
	if !strings.HasPrefix(stdout, wantHead) {
		t.Errorf("report starts %q, want %q", stdout, wantHead)
	}
	var recs []dedup.DroppedLine
	for _, l := range strings.Split(strings.TrimSpace(mustRead(t, droppedFile)), "\n") {
		var d dedup.DroppedLine
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, d)
	}
	if len(recs) != len(dropped) {
		t.Fatalf("%d dropped records, want %d", len(recs), len(dropped))
	}
	for i, d := range recs {
		wantDup := dropped[i]
		var di, dj int
		fmt.Sscan(wantDup.ID, &di)
		fmt.Sscan(wantDup.DuplicateOf, &dj)
		if d.Line != di+1 || d.DuplicateLine != dj+1 || d.Jaccard != wantDup.Jaccard || d.Group != items[di].Group || d.Jaccard < 0.5 {
			t.Errorf("dropped record %+v, want line %d duplicating line %d at %v", d, di+1, dj+1, wantDup.Jaccard)
		}
	}

	// The same input gives the same output, byte for byte.
	out2 := filepath.Join(dir, "kept2.jsonl")
	if code, _, _ := runCommand(t, &dedupCmd{}, "--in", in, "--out", out2, "--json"); code != 0 || mustRead(t, out2) != mustRead(t, out) {
		t.Errorf("second run = %d, output differs: %v", code, mustRead(t, out2) != mustRead(t, out))
	}
}

func TestDedupGrouping(t *testing.T) {
	dir := t.TempDir()
	steps := []any{map[string]any{"action": "grep -rn parse_args src && sed -n 1,80p src/cli.py"}, map[string]any{"action": "python -m pytest tests/test_cli.py -q"}}
	in := filepath.Join(dir, "in.jsonl")
	writeJSONL(t, in,
		map[string]any{"task_id": "a__b-1", "sample": 0, "env_id": "e1", "steps": steps},
		map[string]any{"task_id": "a__b-2", "sample": 0, "env_id": "e2", "steps": steps},
		map[string]any{"task_id": "c__d-1", "sample": 0, "env_id": "e1", "steps": steps},
	)
	tests := []struct {
		groupBy string
		want    string // substring of the report
		kept    int
	}{
		{"repo", "line 2 (a__b-2#0) duplicates line 1 (a__b-1#0): Jaccard 1.000", 2},
		{"env_id", "line 3 (c__d-1#0) duplicates line 1 (a__b-1#0): Jaccard 1.000", 2},
		{"nothing", "3 lines had no nothing field", 2},
	}
	for _, tt := range tests {
		out := filepath.Join(dir, "out-"+tt.groupBy)
		code, stdout, stderr := runCommand(t, &dedupCmd{}, "--in", in, "--out", out, "--group-by", tt.groupBy)
		if n := strings.Count(mustRead(t, out), "\n"); code != 0 || n != tt.kept || !strings.Contains(stdout, tt.want) {
			t.Errorf("cwm dedup --group-by %s = %d, kept %d; want 0, %d and %q\n%s%s", tt.groupBy, code, n, tt.kept, tt.want, stdout, stderr)
		}
	}
	for _, args := range [][]string{{"--in", in}, {"--in", in, "--out", "x", "--threshold", "0"}, {"--in", in, "--out", "x", "more"}} {
		if code, _, _ := runCommand(t, &dedupCmd{}, args...); code != 2 {
			t.Errorf("cwm dedup %v = %d, want 2", args, code)
		}
	}
}

func TestRepoOfID(t *testing.T) {
	for _, tt := range []struct{ id, want string }{
		{"django__django-11099", "django/django"},
		{"psf__requests-1142", "psf/requests"},
		{"textkit-mut-0001", "textkit-mut"},
		{"plain", "plain"},
	} {
		if got := dedup.RepoOfID(tt.id); got != tt.want {
			t.Errorf("RepoOfID(%q) = %q, want %q", tt.id, got, tt.want)
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
