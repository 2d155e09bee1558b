// Package selectiontest holds the scenario of the selection's tests on
// the example repository: a mutate-fix task (snake_case joins with "-"),
// the eight candidate patches, and a scripted test-writing model
// whose replies are good, irrelevant and broken tests.
package selectiontest

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"cwm/internal/env"
	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/reward"
	"cwm/internal/task"
)

// ExampleRepo is the example repository's directory.
func ExampleRepo() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "examples", "textkit")
}

// readExample reads a file of the example repository.
func readExample(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ExampleRepo(), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// GitDiff is `git diff` (with extra options) of base after change: a real
// patch, as a model's would be.
func GitDiff(t testing.TB, base, change map[string]string, opts ...string) string {
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

// SnakeTask is a mutate-fix task of the example repository: snake_case
// joins with "-". It returns the task and the unpatched files the
// candidates are written against.
func SnakeTask(t testing.TB, e *env.Env, id string) (*task.Task, map[string]string) {
	caseOK, dist := readExample(t, "textkit/case.py"), readExample(t, "textkit/distance.py")
	buggy := strings.Replace(caseOK, `    return "_".join(parts)`, `    return "-".join(parts)`, 1)
	if buggy == caseOK {
		t.Fatal("the example's snake_case changed: the bug does not apply")
	}
	bug := GitDiff(t, map[string]string{"textkit/case.py": caseOK}, map[string]string{"textkit/case.py": buggy})
	gold := GitDiff(t, map[string]string{"textkit/case.py": buggy}, map[string]string{"textkit/case.py": caseOK})
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

// WeakTests is a model that writes only the weak test, which a patch
// dropping the separator passes too: the tests cannot tell it from the
// gold patch.
func WeakTests() []string { return []string{"```python\n" + weakTest + "```\n"} }

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

// ScriptedTests are the fake model's replies by seed: good tests at 0, 2,
// 5, 7, 9, 10; a weak one at 4 (a patch that drops the separator passes
// it); an irrelevant one at 1; broken ones at 3 (syntax), 6 (imports a
// missing name), 8 (no code) and 11 (prints Other issues).
func ScriptedTests() []string {
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

// Server serves replies by the request's seed (the test index) on
// 127.0.0.1 until the test ends.
func Server(t testing.TB, replies []string) *modeltest.Server {
	return VerifierServer(t, replies, nil)
}

// VerifierServer is Server that also answers verifier requests (those
// with a system message asking for a <judgement>): P(YES) is yes(the
// request's user message), sent as the logprobs of the judgement token.
func VerifierServer(t testing.TB, replies []string, yes func(user string) float64) *modeltest.Server {
	t.Helper()
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		if yes != nil && len(r.Messages) > 1 && r.Messages[0].Role == "system" && strings.Contains(r.Messages[0].Content, "<judgement>") {
			return Judgement(yes(r.Messages[1].Content))
		}
		if r.Seed == nil || *r.Seed < 0 || int(*r.Seed) >= len(replies) {
			return modeltest.Text("no seed")
		}
		return modeltest.Text(replies[*r.Seed])
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// Judgement is a verifier's reply "<judgement>YES</judgement>" (or NO
// when p < 0.5) whose judgement token has P(YES) = p among its top
// logprobs, tokenised as a Qwen tokenizer would.
func Judgement(p float64) modeltest.Reply {
	word := "YES"
	if p < 0.5 {
		word = "NO"
	}
	lp := func(x float64) float64 { return math.Log(max(x, 1e-9)) }
	var toks []modeltest.TokenLogprob
	for _, tok := range []string{"<", "jud", "gement", ">", word, "</", "jud", "gement", ">"} {
		toks = append(toks, modeltest.TokenLogprob{Token: tok, Top: []modeltest.TopLogprob{{Token: tok}}})
	}
	toks[4].Logprob = lp(max(p, 1-p))
	toks[4].Top = []modeltest.TopLogprob{{Token: "YES", Logprob: lp(p)}, {Token: "NO", Logprob: lp(1 - p)}}
	return modeltest.Reply{Content: "<judgement>" + word + "</judgement>", Logprobs: toks}
}

// Model is a client of a Server of replies.
func Model(t testing.TB, replies []string) *model.Client {
	t.Helper()
	c, err := model.NewClient(model.ClientConfig{BaseURL: Server(t, replies).URL, Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// EightCandidates are the K = 8: the gold patch, a patch that
// fixes the bug and breaks a regression test, the gold patch formatted
// differently, a wrong patch three candidates share, and two empty ones
// (one only adds a comment).
func EightCandidates(t testing.TB, tk *task.Task, base map[string]string) []reward.CandidateLine {
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
		GitDiff(t, base, map[string]string{"textkit/case.py": fixed, "textkit/distance.py": noCheck}),
		GitDiff(t, base, map[string]string{"textkit/case.py": formatted}, "-U5"),
		GitDiff(t, base, map[string]string{"textkit/case.py": wrong}),
		GitDiff(t, base, map[string]string{"textkit/case.py": wrongCommented}),
		GitDiff(t, base, map[string]string{"textkit/case.py": wrong}),
		"",
		GitDiff(t, base, map[string]string{"textkit/case.py": commentOnly}),
	}
	var cands []reward.CandidateLine
	for i, p := range patches {
		cands = append(cands, reward.CandidateLine{ID: tk.InstanceID, Model: "m", Sample: i, Patch: p, From: "model_patch"})
	}
	return cands
}

// WrongCandidates are candidates none of which is correct: the shared
// wrong patch twice, a patch that only breaks a regression test, and an
// empty one.
func WrongCandidates(t testing.TB, tk *task.Task, base map[string]string) []reward.CandidateLine {
	eight := EightCandidates(t, tk, base)
	dist := base["textkit/distance.py"]
	noCheck := strings.Replace(dist, "    if len(a) != len(b):\n", "    if False:\n", 1)
	patches := []string{eight[3].Patch, eight[5].Patch, GitDiff(t, base, map[string]string{"textkit/distance.py": noCheck}), ""}
	var cands []reward.CandidateLine
	for i, p := range patches {
		cands = append(cands, reward.CandidateLine{ID: tk.InstanceID, Model: "m", Sample: i, Patch: p, From: "model_patch"})
	}
	return cands
}
