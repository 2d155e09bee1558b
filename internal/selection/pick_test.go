package selection

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMajority(t *testing.T) {
	tests := []struct {
		name  string
		cands []Candidate
		want  int
	}{
		{"most votes", []Candidate{{"a", 5}, {"b", 1}, {"b", 9}, {"", 0}}, 1},
		{"tie: fewer tokens", []Candidate{{"a", 5}, {"b", 3}, {"a", 7}, {"b", 4}}, 1},
		{"tie: earlier", []Candidate{{"a", 3}, {"b", 3}}, 0},
		{"empty never wins", []Candidate{{"", 0}, {"", 0}, {"a", 100}}, 2},
		{"all empty", []Candidate{{"", 0}, {"", 1}}, -1},
	}
	for _, tc := range tests {
		if got := Majority(tc.cands); got != tc.want {
			t.Errorf("%s: Majority = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// fakeRegression answers from a fixed outcome per class (true: pass),
// honouring maxFail as pytest's --maxfail does, and records the calls.
type fakeRegression struct {
	outcomes map[string][]bool
	calls    []string
}

func (f *fakeRegression) run(_ context.Context, class string, maxFail int) (RegressionRun, error) {
	f.calls = append(f.calls, class)
	r := RegressionRun{Complete: true}
	fails := 0
	for _, ok := range f.outcomes[class] {
		if ok {
			r.Passed++
			continue
		}
		if fails++; maxFail > 0 && fails >= maxFail {
			return RegressionRun{Passed: r.Passed}, nil
		}
	}
	return r, nil
}

func TestBest(t *testing.T) {
	pass := func(n, failAt int) []bool {
		b := make([]bool, n)
		for i := range b {
			b[i] = i != failAt
		}
		return b
	}
	cands := []Candidate{
		{"gold", 10},  // 0
		{"wrong", 5},  // 1
		{"wrong", 5},  // 2
		{"wrong", 6},  // 3
		{"breaks", 8}, // 4
		{"", 0},       // 5 empty
		{"gold", 9},   // 6 same class as 0, fewer tokens
		{"noapply", 1},
	}
	eligible := []bool{true, true, true, true, true, false, true, false}
	reg := &fakeRegression{outcomes: map[string][]bool{
		"gold": pass(4, -1), "wrong": pass(4, -1), "breaks": pass(4, 2),
	}}
	res, err := Best(context.Background(), BestInput{Cands: cands, Eligible: eligible,
		Generated: map[string]int{"gold": 5, "breaks": 5, "wrong": 1}, RegressionSize: 4, Run: reg.run})
	if err != nil {
		t.Fatal(err)
	}
	if res.Winner != 6 {
		t.Errorf("Best winner = %d, want 6 (the gold class's candidate with fewest tokens)", res.Winner)
	}
	// gold runs first (5 generated, 2 votes against breaks' 1), scores 9;
	// breaks may still reach 9 and stops at its first failure; wrong can
	// reach at most 5 and never runs.
	if want := []string{"gold", "breaks"}; !cmp.Equal(reg.calls, want) {
		t.Errorf("regression runs = %v, want %v", reg.calls, want)
	}
	if s := res.Classes["gold"]; s.Score == nil || *s.Score != 9 {
		t.Errorf("gold score = %v, want 9", s.Score)
	}
	if s := res.Classes["breaks"]; s.Score != nil || s.Stopped == "" {
		t.Errorf("breaks: score %v stopped %q, want stopped with no score", s.Score, s.Stopped)
	}
	if s := res.Classes["wrong"]; s.Regression != nil || s.Stopped == "" {
		t.Errorf("wrong: regression %v stopped %q, want not run", s.Regression, s.Stopped)
	}
	if _, ok := res.Classes[""]; ok {
		t.Errorf("the empty class was scored")
	}

	// Exhaustively, every class runs to the end and the pick is the same.
	reg.calls = nil
	ex, err := Best(context.Background(), BestInput{Cands: cands, Eligible: eligible,
		Generated: map[string]int{"gold": 5, "breaks": 5, "wrong": 1}, RegressionSize: 4, Run: reg.run, Exhaustive: true})
	if err != nil || ex.Winner != 6 || len(reg.calls) != 3 {
		t.Errorf("exhaustive: winner %d calls %v err %v, want 6 and three runs", ex.Winner, reg.calls, err)
	}
	if s := ex.Classes["breaks"]; s.Score == nil || *s.Score != 8 {
		t.Errorf("exhaustive breaks score = %v, want 8", s.Score)
	}

	// A tie on tests goes to votes: wrong (3 votes) beats gold (2) when
	// both pass everything.
	tie, err := Best(context.Background(), BestInput{Cands: cands, Eligible: eligible,
		Generated: map[string]int{"gold": 5, "wrong": 5, "breaks": 0}, RegressionSize: 4, Run: reg.run})
	if err != nil || tie.Winner != 1 {
		t.Errorf("tie: winner %d (%v), want 1 (most votes)", tie.Winner, err)
	}
	if tie.Why == "" {
		t.Errorf("tie: no reason given")
	}

	none, err := Best(context.Background(), BestInput{Cands: cands[5:6], Eligible: []bool{false}, RegressionSize: 4, Run: reg.run})
	if err != nil || none.Winner != -1 {
		t.Errorf("only empty: winner %d, want -1", none.Winner)
	}
}

func TestKeepTests(t *testing.T) {
	cands := []Candidate{{"a", 1}, {"a", 1}, {"b", 1}, {"c", 1}, {"", 0}}
	eligible := []bool{true, true, true, true, false}
	passes := map[string][]bool{
		"a": {true, false, true, false, true, false},
		"b": {true, true, false, false, true, false},
		"c": {false, true, false, false, true, false},
	}
	// Counts over candidates: t0=3, t1=2, t2=2, t3=0, t4=4, t5 not reproducing.
	got := KeepTests(cands, eligible, passes, []int{0, 1, 2, 3, 4}, 3)
	if want := []int{0, 1, 4}; !cmp.Equal(got, want) {
		t.Errorf("KeepTests = %v, want %v (ties to the lower index)", got, want)
	}
	if got := KeepTests(cands, eligible, passes, []int{3}, 5); len(got) != 0 {
		t.Errorf("KeepTests kept %v, which no candidate passes", got)
	}
	if g := GeneratedScores(passes, []int{0, 1, 4}); !cmp.Equal(g, map[string]int{"a": 2, "b": 3, "c": 2}) {
		t.Errorf("GeneratedScores = %v", g)
	}
}

func TestSubsets(t *testing.T) {
	if got := Ks(8); !cmp.Equal(got, []int{1, 2, 4, 8}) {
		t.Errorf("Ks(8) = %v", got)
	}
	if got := Ks(6); !cmp.Equal(got, []int{1, 2, 4, 6}) {
		t.Errorf("Ks(6) = %v", got)
	}
	if got := Subsets(8, 2, "x"); len(got) != 28 {
		t.Errorf("Subsets(8, 2) has %d, want all 28", len(got))
	}
	a, b := Subsets(16, 4, "task"), Subsets(16, 4, "task")
	if len(a) != Subsamples || !cmp.Equal(a, b) {
		t.Errorf("Subsets(16, 4) = %d subsets, deterministic %v; want %d, true", len(a), cmp.Equal(a, b), Subsamples)
	}
	seen := map[string]bool{}
	for _, s := range a {
		if len(s) != 4 {
			t.Fatalf("subset %v has %d members", s, len(s))
		}
		seen[string(fmtInts(s))] = true
	}
	if len(seen) != len(a) {
		t.Errorf("Subsets(16, 4) repeats a subset")
	}
	if got := Subsets(8, 8, "x"); len(got) != 1 {
		t.Errorf("Subsets(8, 8) = %v, want the one full set", got)
	}
}
