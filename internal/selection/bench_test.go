package selection

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"cwm/internal/env"
	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/reward"
	"cwm/internal/selection/selectiontest"
	"cwm/internal/task"
)

// A benchmark bug: old (the right code) turned into bug in file; alts are
// wrong fixes; the check is what a reproduction test evaluates.
type benchBug struct {
	file, old, bug string
	alts           [2]string
	imp, expr      string
	want           string
}

var benchBugs = []benchBug{
	{"textkit/case.py", "parts = _parts(name)\n    return \"_\".join(parts)", "parts = _parts(name)\n    return \"-\".join(parts)",
		[2]string{"parts = _parts(name)\n    return \"\".join(parts)", "parts = _parts(name)\n    return \" \".join(parts)"},
		"from textkit.case import snake_case", `snake_case("parseHTTPResponse")`, `"parse_http_response"`},
	{"textkit/case.py", "parts = _parts(name)\n    return \"-\".join(parts)", "parts = _parts(name)\n    return \"_\".join(parts)",
		[2]string{"parts = _parts(name)\n    return \"--\".join(parts)", "parts = _parts(name)\n    return \"\".join(parts)"},
		"from textkit.case import kebab_case", `kebab_case("parseHTTPResponse")`, `"parse-http-response"`},
	{"textkit/case.py", "swapped.append(ch.upper())", "swapped.append(ch)",
		[2]string{"swapped.append(ch.lower())", "swapped.append(ch * 2)"},
		"from textkit.case import swap_case", `swap_case("aB")`, `"Ab"`},
	{"textkit/case.py", "left += 1", "left += 2", [2]string{"left += 3", "left += 4"},
		"from textkit.case import is_palindrome", `is_palindrome("abcdcba")`, `True`},
	{"textkit/case.py", "w[0].upper()", "w[0].lower()", [2]string{"w[0]", "w[:2].upper()"},
		"from textkit.case import acronym", `acronym("portable network graphics")`, `"PNG"`},
	{"textkit/distance.py", "if x != y)", "if x == y)", [2]string{"if x < y)", "if x != x)"},
		"from textkit.distance import hamming", `hamming("abd", "abc")`, `1`},
	{"textkit/stats.py", "return sum(values) / len(values)", "return sum(values) / (len(values) + 1)",
		[2]string{"return sum(values) // len(values)", "return sum(values) / len(values) + 0.5"},
		"from textkit.stats import mean", `round(mean([1, 2, 4]), 6)`, `2.333333`},
	{"textkit/stats.py", "return (ordered[middle - 1] + ordered[middle]) / 2", "return (ordered[middle - 1] + ordered[middle]) // 2",
		[2]string{"return ordered[middle]", "return ordered[middle - 1]"},
		"from textkit.stats import median", `median([1, 2, 3, 6])`, `2.5`},
	{"textkit/layout.py", "left = room // 2", "left = room // 3", [2]string{"left = 0", "left = room"},
		"from textkit.layout import center", `center("ab", 6, "*")`, `"**ab**"`},
	{"textkit/layout.py", "right = room - left\n", "right = room - left - 1\n", [2]string{"right = left\n", "right = room\n"},
		"from textkit.layout import center", `center("ab", 7, "*")`, `"**ab***"`},
}

// checkMarker carries a task's check to the scripted model, in its
// problem statement.
var checkMarker = regexp.MustCompile(`check: (.*) \| (.*) \| (.*)`)

// benchTask makes bug i's task and its 16 candidates: the gold patch
// three ways (contexts of 3, 1 and 5 lines with trailing spaces), a wrong
// fix six times and another twice, the gold patch with a regression test
// broken elsewhere twice, and three empty patches.
func benchTask(tb testing.TB, e *env.Env, i int) (*task.Task, []reward.CandidateLine) {
	bg := benchBugs[i]
	files := map[string]string{}
	for _, f := range []string{"textkit/case.py", "textkit/distance.py", "textkit/stats.py", "textkit/layout.py"} {
		files[f] = readExampleFile(tb, f)
	}
	ok := files[bg.file]
	if strings.Count(ok, bg.old) != 1 {
		tb.Fatalf("bug %d: %q is not once in %s", i, bg.old, bg.file)
	}
	buggy := strings.Replace(ok, bg.old, bg.bug, 1)
	bug := selectiontest.GitDiff(tb, map[string]string{bg.file: ok}, map[string]string{bg.file: buggy})
	base := map[string]string{}
	for f, c := range files {
		base[f] = c
	}
	base[bg.file] = buggy
	with := func(f, content string) map[string]string { return map[string]string{f: content} }
	gold := selectiontest.GitDiff(tb, base, with(bg.file, ok))
	// The breaker fixes the bug and breaks a test of another module.
	other, otherOld, otherNew := "textkit/distance.py", "    if len(a) != len(b):\n", "    if False:\n"
	if bg.file == "textkit/distance.py" {
		other, otherOld, otherNew = "textkit/case.py", "return head + \"\".join(p.capitalize() for p in rest)", "return head + \"\".join(rest)"
	}
	broken := map[string]string{bg.file: ok, other: strings.Replace(base[other], otherOld, otherNew, 1)}
	if broken[other] == base[other] {
		tb.Fatalf("bug %d: the breaker's change does not apply", i)
	}
	spaced := strings.Replace(ok, bg.old, strings.TrimRight(bg.old, "\n")+"   ", 1)
	patches := []string{
		gold,
		selectiontest.GitDiff(tb, base, with(bg.file, ok), "-U1"),
		selectiontest.GitDiff(tb, base, with(bg.file, spaced), "-U5"),
	}
	wrong := selectiontest.GitDiff(tb, base, with(bg.file, strings.Replace(buggy, bg.bug, bg.alts[0], 1)))
	wrong2 := selectiontest.GitDiff(tb, base, with(bg.file, strings.Replace(buggy, bg.bug, bg.alts[1], 1)))
	breaker := selectiontest.GitDiff(tb, base, broken)
	for _, p := range []string{wrong, wrong, breaker, wrong, wrong2, "", wrong, wrong, breaker, wrong, wrong2, "", ""} {
		patches = append(patches, p)
	}
	testFile := "tests/test_" + strings.TrimSuffix(strings.TrimPrefix(bg.file, "textkit/"), ".py") + ".py"
	fn := strings.Fields(strings.TrimPrefix(bg.imp, "from "))[2]
	var f2p, p2p []string
	for _, id := range e.Passing() {
		switch {
		case strings.HasPrefix(id, testFile) && strings.Contains(id, fn):
			f2p = append(f2p, id)
		case strings.HasPrefix(id, testFile):
			p2p = append(p2p, id)
		}
	}
	id := fmt.Sprintf("textkit__bench-%d", i)
	tk := &task.Task{InstanceID: id, Repo: "textkit", Patch: gold, BugPatch: bug, EnvID: e.ID, Kind: "mutate",
		FailToPass: f2p, PassToPass: p2p,
		ProblemStatement: fmt.Sprintf("%s does not return %s.\ncheck: %s | %s | %s", bg.expr, bg.want, bg.imp, bg.expr, bg.want)}
	var cands []reward.CandidateLine
	for s, p := range patches {
		cands = append(cands, reward.CandidateLine{ID: id, Model: "m", Sample: s, Patch: p, From: "model_patch"})
	}
	return tk, cands
}

func readExampleFile(tb testing.TB, name string) string {
	tb.Helper()
	b, err := readFile(selectiontest.ExampleRepo() + "/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// benchScript writes test i of a task from the check in its prompt: of
// every 8, five good tests, one irrelevant (it checks nothing the bug
// touches), one with a syntax error and one importing a missing name.
func benchScript(r *modeltest.Request) modeltest.Reply {
	m := checkMarker.FindStringSubmatch(r.Issue())
	if m == nil || r.Seed == nil {
		return modeltest.Text("no check")
	}
	imp, expr, want := m[1], m[2], m[3]
	var code string
	switch *r.Seed % 8 {
	case 5:
		code = "print(\"Issue resolved\")\n"
	case 6:
		code = imp + "\n\ndef broken(:\n    pass\n"
	case 7:
		code = imp + "_missing\n\nprint(\"Issue reproduced\")\n"
	default:
		code = fmt.Sprintf("%s\n\ntry:\n    got = %s\nexcept Exception:\n    print(\"Other issues\")\nelse:\n    print(\"Issue resolved\" if got == %s else \"Issue reproduced\")\n", imp, expr, want)
	}
	return modeltest.Text("```python\n" + code + "```\n")
}

// selectTimed selects one input with cfg and returns its wall time.
func selectTimed(tb testing.TB, sbs *env.Sandboxes, cfg Config, in Input) (time.Duration, *Result) {
	start := time.Now()
	res, err := Select(context.Background(), sbs, cfg, in)
	if err != nil {
		tb.Fatal(err)
	}
	return time.Since(start), res
}

// BenchmarkSelect is the selection against the naive procedure (every
// candidate against every generated test and the whole regression set)
// on 10 tasks of the example repository with K = 16 candidates and
// T = 40 scripted tests, in the same run; it reports the ratios of wall
// time, sandboxes and test runs (target: time at most 0.3x). The two
// alternate task by task, so that a change in the machine's load falls
// on both.
func BenchmarkSelect(b *testing.B) {
	sbs, e, _ := textkitEnv(b)
	var inputs []Input
	for i := range benchBugs {
		tk, cands := benchTask(b, e, i)
		inputs = append(inputs, Input{Task: tk, Env: e, Cands: cands})
	}
	srv, err := modeltest.Start(benchScript, false)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	client, err := model.NewClient(model.ClientConfig{BaseURL: srv.URL, Model: "fake", MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{Client: client, Tests: 40, Keep: 5, Method: MethodBest}
	naive := cfg
	naive.Naive = true
	var sel, nai time.Duration
	var selC, naiC Counts
	for b.Loop() {
		for i, in := range inputs {
			st, sr := selectTimed(b, sbs, cfg, in)
			nt, nr := selectTimed(b, sbs, naive, in)
			if sr.Winner != 1 || nr.Winner != 1 {
				b.Fatalf("task %d: the selection picked %d, the naive procedure %d; want the gold patch with the fewest tokens (1)", i, sr.Winner, nr.Winner)
			}
			b.Logf("task %d: selection %.1fs %+v, naive %.1fs %+v", i, st.Seconds(), sr.Counts, nt.Seconds(), nr.Counts)
			sel, nai = sel+st, nai+nt
			selC.Add(sr.Counts)
			naiC.Add(nr.Counts)
		}
	}
	b.ReportMetric(sel.Seconds()/nai.Seconds(), "time-ratio")
	b.ReportMetric(float64(selC.Sandboxes)/float64(naiC.Sandboxes), "sandbox-ratio")
	b.ReportMetric(float64(selC.GeneratedRuns+selC.RegressionRuns)/float64(naiC.GeneratedRuns+naiC.RegressionRuns), "testrun-ratio")
	b.ReportMetric(sel.Seconds()/float64(b.N), "select-s/op")
	b.ReportMetric(nai.Seconds()/float64(b.N), "naive-s/op")
}
