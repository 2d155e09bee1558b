package selection

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/reward"
	"cwm/internal/sandbox"
	"cwm/internal/selection/selectiontest"
)

var (
	envOnce  sync.Once
	testEnv  *env.Env
	testRT   *sandbox.Runtime
	testHome string
	envErr   error
)

// textkitEnv builds the example repository's environment once for the
// package's tests.
func textkitEnv(t testing.TB) (*env.Sandboxes, *env.Env, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the example environment")
	}
	envOnce.Do(func() {
		if testHome, envErr = os.MkdirTemp("", "cwm-select-test-"); envErr != nil {
			return
		}
		if testRT, envErr = sandbox.NewRuntime(sandbox.Options{Home: testHome}); envErr != nil {
			return
		}
		testEnv, envErr = envbuild.Build(context.Background(), env.NewSandboxes(testRT), envbuild.Options{
			Home: testHome, Source: selectiontest.ExampleRepo(), Runs: 1, NoCoverage: true, Limits: env.RunLimits{Timeout: 2 * time.Minute}})
		if envErr == nil && !testEnv.Usable {
			envErr = fmt.Errorf("environment not usable: %s", testEnv.Reason)
		}
	})
	if envErr != nil {
		t.Fatalf("build the example environment: %v", envErr)
	}
	return env.NewSandboxes(testRT), testEnv, testHome
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testRT != nil {
		testRT.Close()
	}
	if testHome != "" {
		os.RemoveAll(testHome)
	}
	os.Exit(code)
}

// TestSelectEightCandidates is the scenario on the example
// repository: best@k picks a correct patch, majority@k the shared wrong
// one, pass@k is 1, and every intermediate is as it must be.
func TestSelectEightCandidates(t *testing.T) {
	sbs, e, _ := textkitEnv(t)
	tk, base := selectiontest.SnakeTask(t, e, "textkit__snake-8")
	cands := selectiontest.EightCandidates(t, tk, base)
	// CWM's regression set (the default) keeps PASS_TO_PASS, which is in
	// the repository the agent sees, and never holds FAIL_TO_PASS.
	hidden := map[string]bool{}
	for _, id := range tk.FailToPass {
		hidden[id] = true
	}
	var mu sync.Mutex
	var ranIDs []string
	cfg := Config{Client: selectiontest.Model(t, selectiontest.ScriptedTests()), Tests: 12, Keep: 5, Method: MethodBest, Curves: true,
		AuditRun: func(ids []string) { mu.Lock(); ranIDs = append(ranIDs, ids...); mu.Unlock() }}
	res, err := Select(context.Background(), sbs, cfg, Input{Task: tk, Env: e, Cands: cands})
	if err != nil {
		t.Fatal(err)
	}

	// The tests: verdicts on the unpatched tree, and what was dropped.
	wantVerdict := []Verdict{Reproduced, Resolved, Reproduced, Other, Reproduced, Reproduced, Other, Reproduced, NoCode, Reproduced, Reproduced, Other}
	for i, g := range res.Tests {
		if g.Unpatched != wantVerdict[i] {
			t.Errorf("test %d on the unpatched tree: %s (%s), want %s", i, g.Unpatched, g.Detail, wantVerdict[i])
		}
		if g.Reproduces() != (g.Dropped == "") {
			t.Errorf("test %d: reproduces %v but dropped %q", i, g.Reproduces(), g.Dropped)
		}
	}
	if !strings.Contains(res.Tests[3].Detail, "SyntaxError") || !strings.Contains(res.Tests[6].Detail, "ImportError") {
		t.Errorf("broken tests' details %q, %q; want the SyntaxError and the ImportError", res.Tests[3].Detail, res.Tests[6].Detail)
	}
	if res.Reproducing != 7 || res.Irrelevant != 1 || res.Broken != 4 {
		t.Errorf("reproducing/irrelevant/broken = %d/%d/%d, want 7/1/4", res.Reproducing, res.Irrelevant, res.Broken)
	}
	// The weak test 4 is passed by 6 candidates (gold 2, breaker 1, wrong
	// 3); the good ones by 3 each: ties go to the lower index.
	if want := []int{0, 2, 4, 5, 7}; fmt.Sprint(res.Kept) != fmt.Sprint(want) {
		t.Errorf("kept tests %v, want %v", res.Kept, want)
	}

	// Classes, votes, kept-test vectors, scores.
	if res.Classes != 3 {
		t.Errorf("classes = %d, want 3 (gold, breaker, wrong)", res.Classes)
	}
	R := len(res.Regression)
	if R < 20 || res.RegressionPool != R {
		t.Errorf("regression set %d tests of a pool of %d; want all of at least 20", R, res.RegressionPool)
	}
	inSet := map[string]bool{}
	for _, id := range res.Regression {
		inSet[id] = true
		if hidden[id] || strings.Contains(id, "test_round_trip") {
			t.Errorf("regression set holds %s: hidden, or failing on the unpatched tree", id)
		}
	}
	for _, id := range tk.PassToPass {
		if !inSet[id] {
			t.Errorf("regression set (%s) lacks PASS_TO_PASS test %s", res.RegressionSet, id)
		}
	}
	allPass := fmt.Sprint([]Verdict{Resolved, Resolved, Resolved, Resolved, Resolved})
	wrongVec := fmt.Sprint([]Verdict{Reproduced, Reproduced, Resolved, Reproduced, Reproduced})
	want := []struct {
		class, votes int
		empty        bool
		vec          string
		resolved     bool
	}{
		{0, 2, false, allPass, true}, {1, 1, false, allPass, true}, {0, 2, false, allPass, true},
		{2, 3, false, wrongVec, false}, {2, 3, false, wrongVec, false}, {2, 3, false, wrongVec, false},
		{-1, 0, true, "[]", false}, {-1, 0, true, "[]", false},
	}
	for i, c := range res.Candidates {
		w := want[i]
		if c.Class != w.class || c.Votes != w.votes || c.Empty != w.empty || fmt.Sprint(c.Generated) != w.vec && !w.empty {
			t.Errorf("candidate %d: class %d votes %d empty %v kept-test verdicts %v; want %d %d %v %s", i, c.Class, c.Votes, c.Empty, c.Generated, w.class, w.votes, w.empty, w.vec)
		}
		if c.Resolved == nil || *c.Resolved != w.resolved {
			t.Errorf("candidate %d resolved %v, want %v", i, c.Resolved, w.resolved)
		}
	}
	gold, breaker, wrong := res.Candidates[0].Scored, res.Candidates[1].Scored, res.Candidates[3].Scored
	if gold.Score == nil || *gold.Score != 5+R {
		t.Errorf("gold score %v, want %d (5 kept tests and %d regression tests)", gold.Score, 5+R, R)
	}
	if breaker.Score != nil || breaker.Regression == nil || *breaker.Regression >= R || breaker.Stopped == "" {
		t.Errorf("breaker: score %v regression %v stopped %q; want its run stopped at its first failure", breaker.Score, breaker.Regression, breaker.Stopped)
	}
	if wrong.Regression != nil || wrong.Generated != 1 || !strings.HasPrefix(wrong.Stopped, "not run") {
		t.Errorf("wrong: generated %d regression %v stopped %q; want 1 and never run", wrong.Generated, wrong.Regression, wrong.Stopped)
	}

	// The picks.
	if res.Best != 0 || res.Winner != 0 {
		t.Errorf("best@k picked %d (winner %d), want 0 (the gold patch, fewer tokens than its formatted twin)", res.Best, res.Winner)
	}
	if res.Majority != 3 {
		t.Errorf("majority@k picked %d, want 3 (the shared wrong patch)", res.Majority)
	}
	if res.Resolved == nil || !*res.Resolved || !strings.Contains(res.Why, "most tests passed") {
		t.Errorf("winner resolved %v, why %q", res.Resolved, res.Why)
	}

	// The work: one unpatched tree, one per class, the gold regression run
	// and the breaker's stopped one; the wrong class never ran.
	if c := res.Counts; c.Sandboxes != 6 || c.GeneratedRuns != 11+3*7 || c.RegressionRuns >= int64(3*R) {
		t.Errorf("counts %+v, want 6 sandboxes, %d generated runs, fewer than %d regression runs", c, 11+3*7, 3*R)
	}

	// The curve: pass@k exact, majority and best by subsets.
	last := res.Curve[len(res.Curve)-1]
	if last.K != 8 || last.Pass != 1 || last.Best != 1 || last.Majority != 0 || last.Subsets != 1 {
		t.Errorf("curve at k=8: %+v, want pass 1, best 1, majority 0 over 1 subset", last)
	}
	first := res.Curve[0]
	if first.K != 1 || !near(first.Pass, 3.0/8) || !near(first.Best, 3.0/8) || !near(first.Majority, 3.0/8) || first.Subsets != 8 {
		t.Errorf("curve at k=1: %+v, want 3/8 for every method over 8 subsets", first)
	}
	for _, p := range res.Curve {
		if p.Best < p.Majority-1e-9 || p.Pass < p.Best-1e-9 {
			t.Errorf("curve at k=%d: %+v; want majority <= best <= pass", p.K, p)
		}
	}

	// No FAIL_TO_PASS test ever ran during selection (curves included).
	if len(ranIDs) == 0 {
		t.Fatal("no regression run was audited")
	}
	for _, id := range ranIDs {
		if hidden[id] {
			t.Fatalf("hidden test %s ran during selection", id)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

var readFile = os.ReadFile

// TestNaiveSamePick: the naive procedure (every candidate, every test, no
// early stopping) picks the same patch with more work, on one of the
// benchmark's tasks.
func TestNaiveSamePick(t *testing.T) {
	sbs, e, _ := textkitEnv(t)
	tk, cands := benchTask(t, e, 0)
	srv, err := modeltest.Start(benchScript, false)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	client, err := model.NewClient(model.ClientConfig{BaseURL: srv.URL, Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Client: client, Tests: 16, Keep: 5, Method: MethodBest}
	sel, err := Select(context.Background(), sbs, cfg, Input{Task: tk, Env: e, Cands: cands})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Naive = true
	nai, err := Select(context.Background(), sbs, cfg, Input{Task: tk, Env: e, Cands: cands})
	if err != nil {
		t.Fatal(err)
	}
	// Candidate 1 is the gold patch with one line of context: the fewest
	// tokens of the gold class.
	if sel.Winner != 1 || nai.Winner != 1 || fmt.Sprint(sel.Kept) != fmt.Sprint(nai.Kept) {
		t.Errorf("winners %d and %d, kept %v and %v; want 1 both, the same tests", sel.Winner, nai.Winner, sel.Kept, nai.Kept)
	}
	// Selection: the unpatched tree, 4 classes, the gold regression run
	// and the breaker's stopped one. Naive: the unpatched tree and 13
	// non-empty candidates.
	if sel.Counts.Sandboxes != 7 || nai.Counts.Sandboxes != 14 {
		t.Errorf("sandboxes %d (selection) and %d (naive), want 7 and 14", sel.Counts.Sandboxes, nai.Counts.Sandboxes)
	}
	if sel.Counts.RegressionRuns >= nai.Counts.RegressionRuns/4 || sel.Counts.GeneratedRuns >= nai.Counts.GeneratedRuns/2 {
		t.Errorf("selection work %+v against naive %+v: want far less", sel.Counts, nai.Counts)
	}
}

// TestMajorityNeedsNoExecution: majority@k without curves starts no
// sandbox and asks no model (both are nil here). CWM's exact grouping
// counts the two identical wrong patches (the third differs by a
// comment), the normalised one all three; a tie goes to the first in the
// shuffle's order.
func TestMajorityNeedsNoExecution(t *testing.T) {
	e := &env.Env{ID: "e", Baseline: []env.TestResult{{ID: "tests/test_case.py::test_snake_and_kebab[x]", Status: "pass"}, {ID: "tests/test_case.py::test_title", Status: "pass"}}}
	tk, base := selectiontest.SnakeTask(t, e, "textkit__snake-majority")
	cands := selectiontest.EightCandidates(t, tk, base)
	tied := []reward.CandidateLine{cands[0], cands[3], cands[0], cands[5]}
	tests := []struct {
		name     string
		grouping string
		cands    []reward.CandidateLine
		shuffle  []int
		want     int
		why      string
	}{
		{"exact", "", cands, nil, 3, "2 of 8 candidates share its exact patch"},
		{"normalised", GroupNormalised, cands, nil, 3, "3 of 8 candidates share its normalised patch"},
		{"tie, input order", GroupExact, tied, nil, 0, "2 of 4"},
		{"tie, shuffled", GroupExact, tied, []int{3, 2, 1, 0}, 3, "2 of 4"},
	}
	for _, tc := range tests {
		res, err := Select(context.Background(), nil, Config{Method: MethodMajority, Majority: tc.grouping, Tests: 40, Keep: 5},
			Input{Task: tk, Env: e, Cands: tc.cands, Shuffle: tc.shuffle})
		if err != nil {
			t.Fatal(err)
		}
		if res.Winner != tc.want || res.Majority != tc.want || res.Best != -1 || res.Counts != (Counts{}) || res.MethodVersion != MethodVersions[MethodMajority] {
			t.Errorf("%s: winner %d majority %d best %d counts %+v version %q; want %d, %d, -1, no work", tc.name, res.Winner, res.Majority, res.Best, res.Counts, res.MethodVersion, tc.want, tc.want)
		}
		if !strings.Contains(res.Why, tc.why) {
			t.Errorf("%s: why %q, want %q in it", tc.name, res.Why, tc.why)
		}
	}
}
