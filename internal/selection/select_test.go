package selection

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	"cwm/internal/task"
)

const exampleRepo = "../../examples/textkit"

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
			Home: testHome, Source: exampleRepo, Runs: 1, NoCoverage: true, Limits: env.RunLimits{Timeout: 2 * time.Minute}})
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

// readExample reads a file of the example repository.
func readExample(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(exampleRepo, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// gitDiff is `git diff` (with extra options) of base after change: a real
// patch, as a model's would be.
func gitDiff(t testing.TB, base, change map[string]string, opts ...string) string {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	write := func(files map[string]string) {
		for name, content := range files {
			p := filepath.Join(dir, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	git("init", "-q")
	write(base)
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	write(change)
	git("add", "-A")
	return git(append([]string{"diff", "--cached"}, opts...)...)
}

// snakeTask is a mutate-fix task of the example repository: snake_case
// joins with "-". It returns the task and the unpatched files the
// candidates are written against.
func snakeTask(t testing.TB, e *env.Env, id string) (*task.Task, map[string]string) {
	caseOK, dist := readExample(t, "textkit/case.py"), readExample(t, "textkit/distance.py")
	buggy := strings.Replace(caseOK, `    return "_".join(parts)`, `    return "-".join(parts)`, 1)
	if buggy == caseOK {
		t.Fatal("the example's snake_case changed: the bug does not apply")
	}
	bug := gitDiff(t, map[string]string{"textkit/case.py": caseOK}, map[string]string{"textkit/case.py": buggy})
	gold := gitDiff(t, map[string]string{"textkit/case.py": buggy}, map[string]string{"textkit/case.py": caseOK})
	var f2p, p2p []string
	for _, id := range e.Passing() {
		switch {
		case strings.Contains(id, "test_snake_and_kebab"), strings.Contains(id, "test_constant_case"), strings.Contains(id, "test_round_trip"):
			f2p = append(f2p, id)
		case strings.HasPrefix(id, "tests/test_case.py"):
			p2p = append(p2p, id)
		}
	}
	if len(f2p) == 0 || len(p2p) == 0 {
		t.Fatalf("no snake_case tests among %d passing tests", len(e.Passing()))
	}
	tk := &task.Task{InstanceID: id, Repo: "textkit", BaseCommit: e.Commit, Patch: gold, BugPatch: bug,
		ProblemStatement: "snake_case('parseHTTPResponse') returns 'parse-http-response' instead of 'parse_http_response'.",
		FailToPass:       f2p, PassToPass: p2p, EnvID: e.ID, Kind: "mutate"}
	return tk, map[string]string{"textkit/case.py": buggy, "textkit/distance.py": dist}
}

// Scripted tests in Agentless's format, as the fake model writes them.
func goodTest(in, want string) string {
	return fmt.Sprintf("from textkit.case import snake_case\n\n\ndef test():\n    try:\n        got = snake_case(%q)\n"+
		"    except Exception:\n        print(\"Other issues\")\n        return\n    if got == %q:\n        print(\"Issue resolved\")\n"+
		"    else:\n        print(\"Issue reproduced\")\n\n\ntest()\n", in, want)
}

const (
	weakTest = "from textkit.case import snake_case\n\nprint(\"Issue resolved\" if \"-\" not in snake_case(\"parseHTTPResponse\") else \"Issue reproduced\")\n"
	// irrelevantTest checks kebab_case, which the bug does not touch.
	irrelevantTest = "from textkit.case import kebab_case\n\nprint(\"Issue resolved\" if kebab_case(\"parseHTTPResponse\") == \"parse-http-response\" else \"Issue reproduced\")\n"
	syntaxTest     = "from textkit.case import snake_case\n\ndef test(:\n    print(\"Issue reproduced\")\n"
	importTest     = "from textkit.case import snake_caze\n\nprint(\"Issue reproduced\" if snake_caze(\"aB\") != \"a_b\" else \"Issue resolved\")\n"
	otherTest      = "from textkit.case import snake_case\n\ntry:\n    snake_case(None)\n    print(\"Issue resolved\")\nexcept Exception:\n    print(\"Other issues\")\n"
)

// scriptedTests are the fake model's replies by seed: good tests at 0, 2,
// 5, 7, 9, 10; a weak one at 4 (a patch that drops the separator passes
// it); an irrelevant one at 1; broken ones at 3 (syntax), 6 (imports a
// missing name), 8 (no code) and 11 (prints Other issues).
func scriptedTests() []string {
	block := func(code string) string { return "Here is the test.\n\n```python\n" + code + "```\n" }
	return []string{
		block(goodTest("parseHTTPResponse", "parse_http_response")),
		block(irrelevantTest),
		block(goodTest("PascalCase", "pascal_case")),
		block(syntaxTest),
		block(weakTest),
		block(goodTest("Some Words here", "some_words_here")),
		block(importTest),
		block(goodTest("getX", "get_x")),
		"I cannot write a test for this.",
		block(goodTest("someHTML5Parser", "some_html5_parser")),
		block(goodTest("userID", "user_id")),
		block(otherTest),
	}
}

// testModel serves replies by the request's seed.
func testModel(t testing.TB, replies []string) *model.Client {
	t.Helper()
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		if r.Seed == nil || *r.Seed < 0 || int(*r.Seed) >= len(replies) {
			return modeltest.Text("no seed")
		}
		return modeltest.Text(replies[*r.Seed])
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	c, err := model.NewClient(model.ClientConfig{BaseURL: srv.URL, Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// eightCandidates are the K = 8: the gold patch, a patch that
// fixes the bug and breaks a regression test, the gold patch formatted
// differently, a wrong patch three candidates share, and two empty ones
// (one only adds a comment).
func eightCandidates(t testing.TB, tk *task.Task, base map[string]string) []reward.CandidateLine {
	caseBug, dist := base["textkit/case.py"], base["textkit/distance.py"]
	fixed := strings.Replace(caseBug, `    return "-".join(parts)`, `    return "_".join(parts)`, 1)
	formatted := strings.Replace(caseBug, `    return "-".join(parts)`, "    # underscores, as the name says\n    return \"_\" .join( parts )\n", 1)
	wrong := strings.Replace(caseBug, `    return "-".join(parts)`, `    return "".join(parts)`, 1)
	wrongCommented := strings.Replace(caseBug, `    return "-".join(parts)`, `    return "".join(parts)  # no separator`, 1)
	noCheck := strings.Replace(dist, "    if len(a) != len(b):\n        raise ValueError(\"hamming distance needs equal lengths (%d != %d)\" % (len(a), len(b)))\n", "", 1)
	if noCheck == dist {
		t.Fatal("the example's hamming changed")
	}
	commentOnly := strings.Replace(caseBug, "def snake_case(name):\n", "def snake_case(name):\n    # see the issue\n", 1)
	patches := []string{
		tk.Patch,
		gitDiff(t, base, map[string]string{"textkit/case.py": fixed, "textkit/distance.py": noCheck}),
		gitDiff(t, base, map[string]string{"textkit/case.py": formatted}, "-U5"),
		gitDiff(t, base, map[string]string{"textkit/case.py": wrong}),
		gitDiff(t, base, map[string]string{"textkit/case.py": wrongCommented}),
		gitDiff(t, base, map[string]string{"textkit/case.py": wrong}),
		"",
		gitDiff(t, base, map[string]string{"textkit/case.py": commentOnly}),
	}
	var cands []reward.CandidateLine
	for i, p := range patches {
		cands = append(cands, reward.CandidateLine{ID: tk.InstanceID, Model: "m", Sample: i, Patch: p, From: "model_patch"})
	}
	return cands
}

// TestSelectEightCandidates is the scenario on the example
// repository: best@k picks a correct patch, majority@k the shared wrong
// one, pass@k is 1, and every intermediate is as it must be.
func TestSelectEightCandidates(t *testing.T) {
	sbs, e, _ := textkitEnv(t)
	tk, base := snakeTask(t, e, "textkit__snake-8")
	cands := eightCandidates(t, tk, base)
	hidden := map[string]bool{}
	for _, id := range append(append([]string{}, tk.FailToPass...), tk.PassToPass...) {
		hidden[id] = true
	}
	var mu sync.Mutex
	var ranIDs []string
	cfg := Config{Client: testModel(t, scriptedTests()), Tests: 12, Keep: 5, Method: MethodBest, Curves: true,
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
	for _, id := range res.Regression {
		if hidden[id] || strings.Contains(id, "test_round_trip") {
			t.Errorf("regression set holds %s: hidden, or failing on the unpatched tree", id)
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

	// No hidden test ever ran during selection (curves included).
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
