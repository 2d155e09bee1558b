package tasks

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/envbuild"
	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/task"
	"cwm/internal/testrun"
)

func TestClassifyFix(t *testing.T) {
	const featurePatch = "--- a/pkg/text.py\n+++ b/pkg/text.py\n@@ -1,2 +1,6 @@\n def join(a, b, sep=\",\"):\n     return a + sep + b\n+\n+\n+def ellipsize(s, n, mark=\"...\"):\n+    return s[:n] + mark\n"
	const fixPatch = "--- a/pkg/text.py\n+++ b/pkg/text.py\n@@ -1,2 +1,2 @@\n def join(a, b, sep=\",\"):\n-    return a + \",\" + b\n+    return a + sep + b\n"
	assertion := map[string]testrun.Test{"tests/t.py::test_a": {Outcome: testrun.Fail, Message: "AssertionError: assert 'a,b' == 'a-b'"}}
	for _, c := range []struct {
		name, msg, patch string
		fails            map[string]testrun.Test
		fix              bool
		score            int
		issues           []string
		reason           string
	}{
		{"terse fix, assertion", "Use sep in both", fixPatch, assertion, true, 2, nil, "fail in the code under test"},
		{"fix word and issue", "Fix join's separator\n\nCloses #12, see also gh-9.", fixPatch, assertion, true, 6, []string{"#12", "#9"}, `closes issue #12`},
		{"feature, import error", "add ellipsize", featurePatch,
			map[string]testrun.Test{"tests/t.py::test_e": {Outcome: testrun.Fail, Message: "ImportError: cannot import name 'ellipsize' from 'pkg.text' (/repo/pkg/text.py)"}},
			false, -5, nil, "a name the commit adds is missing (ellipsize)"},
		{"new keyword", "Let callers choose the mark", featurePatch,
			map[string]testrun.Test{"tests/t.py::test_e": {Outcome: testrun.Fail, Message: "TypeError: ellipsize() got an unexpected keyword argument 'mark'"}},
			false, -3, nil, "(mark)"},
		{"missing name the commit does not add", "Use sep in both", fixPatch,
			map[string]testrun.Test{"tests/t.py::test_a": {Outcome: testrun.Error, Message: "AttributeError: 'NoneType' object has no attribute 'strip'"}},
			true, 2, nil, "AttributeError"},
		{"docs commit", "Document join", fixPatch, assertion, false, 0, nil, `the subject says "document"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f2p []string
			for id := range c.fails {
				f2p = append(f2p, id)
			}
			got := classifyFix(c.msg, c.patch, f2p, c.fails)
			if got.Fix != c.fix || got.Score != c.score || !cmp.Equal(got.Issues, c.issues) || !strings.Contains(strings.Join(got.Reasons, "; "), c.reason) {
				t.Errorf("classifyFix(%q) = %+v; want fix %t, score %d, issues %v, a reason with %q", c.msg, got, c.fix, c.score, c.issues, c.reason)
			}
		})
	}
}

func TestAddedNames(t *testing.T) {
	patch := "--- /dev/null\n+++ b/pkg/fmt/__init__.py\n@@ -0,0 +1 @@\n+WIDTH: int = 80\n" +
		"--- a/pkg/text.py\n+++ b/pkg/text.py\n@@ -1,3 +1,6 @@\n class Box:\n-    def wrap(self, s):\n+    def wrap(self, s, width=None, *, strict=False):\n         pass\n+\n+async def fetch(url):\n+    pass\n"
	got := sortedKeys(addedNames(patch))
	want := []string{"WIDTH", "fetch", "fmt", "strict", "url", "width"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("addedNames (-want +got):\n%s", diff)
	}
}

// TestCommitsClassify: --auto over a history with a terse fix ("Use sep
// in both", its new test failing by assertion) and a feature ("add
// ellipsize", its new test failing with an ImportError of the name it
// adds) keeps the fix and rejects the feature with the classifier's
// reasons; --keep-all keeps both, each with its class.
func TestCommitsClassify(t *testing.T) {
	dir := filepath.Join(testHome, "src", "joiner")
	git(t, testHome, "init", "-q", "-b", "main", dir)
	const test0 = "from pkg.text import join\n\n\ndef test_join():\n    assert join('a', 'b') == 'a,b'\n"
	writeFiles(t, dir, map[string]string{
		"pkg/__init__.py":    "",
		"pkg/text.py":        "def join(a, b, sep=','):\n    return a + ',' + b\n",
		"tests/test_text.py": test0,
	})
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "Start joiner")
	const test1 = test0 + "\n\ndef test_join_sep():\n    assert join('a', 'b', sep='-') == 'a-b'\n"
	writeFiles(t, dir, map[string]string{
		"pkg/text.py":        "def join(a, b, sep=','):\n    return a + sep + b\n",
		"tests/test_text.py": test1,
	})
	git(t, dir, "commit", "-q", "-a", "-m", "Use sep in both")
	fix := git(t, dir, "rev-parse", "HEAD")
	writeFiles(t, dir, map[string]string{
		"pkg/text.py":        "def join(a, b, sep=','):\n    return a + sep + b\n\n\ndef ellipsize(s, n):\n    return s if len(s) <= n else s[:n] + '...'\n",
		"tests/test_text.py": test1 + "\n\ndef test_ellipsize():\n    from pkg.text import ellipsize\n\n    assert ellipsize('abcdef', 3) == 'abc...'\n",
	})
	git(t, dir, "commit", "-q", "-a", "-m", "add ellipsize")
	feature := git(t, dir, "rev-parse", "HEAD")
	e := buildEnv(t, envbuild.Options{Source: dir, Test: "python -m pytest -q"})
	ctx := context.Background()

	out := filepath.Join(t.TempDir(), "tasks.jsonl")
	ds, err := Commits(ctx, testSandboxes, e, CommitOptions{Out: out, Auto: true, Build: atParent})
	if err != nil || len(ds) != 2 {
		t.Fatalf("Commits(--auto) = %+v, %v; want 2 decisions", ds, err)
	}
	if d := ds[0]; d.Key != feature || d.Kind != kindNotFix || d.FixClass == nil || d.FixClass.Fix ||
		!strings.Contains(d.Reason, `the subject says "add"`) || !strings.Contains(d.Reason, "a name the commit adds is missing (ellipsize)") {
		t.Errorf("feature commit: %+v %+v; want rejected as not a fix, for its subject and its ImportError", d, d.FixClass)
	}
	if d := ds[1]; d.Key != fix || d.Kind != kindVerified || d.FixClass == nil || !d.FixClass.Fix {
		t.Errorf("fix commit: %+v %+v; want verified and classified a fix", d, d.FixClass)
	}
	tasks, err := task.Load(out)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks: %v, %d; want the fix only", err, len(tasks))
	}
	tk := tasks[0]
	if tk.StatementSource != "commit message" || tk.ProblemStatement != "Use sep in both\n" || tk.FixClass == nil || !tk.FixClass.Fix ||
		!strings.Contains(strings.Join(tk.FixClass.Reasons, "; "), "1 of 1 FAIL_TO_PASS tests fail in the code under test (tests/test_text.py::test_join_sep: AssertionError") {
		t.Errorf("fix task: statement %q from %q, class %+v", tk.ProblemStatement, tk.StatementSource, tk.FixClass)
	}

	// --keep-all keeps the feature too. With a model, the statement is
	// written from the failing tests: the first one for the fix quotes
	// the fix's line and is asked again; the second is kept.
	const quoting = "join ignores sep: it should do `return a + sep + b`."
	const clean = "join('a', 'b', sep='-') returns 'a,b': the separator I pass is ignored."
	// The classifier model calls the feature a fix (so its verdict, not
	// the rules', must decide) and answers the fix without a verdict (so
	// the rules must).
	isClassify := func(r *modeltest.Request) bool {
		return len(r.Messages) > 0 && r.Messages[0].Content == classifySystem
	}
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		if isClassify(r) {
			if strings.Contains(r.Issue(), "ellipsize") {
				return modeltest.Text("**FIX.** It repairs how long strings are shown.")
			}
			return modeltest.Text("Hard to say.")
		}
		if strings.Contains(r.Issue(), "test_join_sep") && r.Turn() == 0 {
			return modeltest.Text(quoting)
		}
		return modeltest.Text(clean)
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	client, err := model.NewClient(model.ClientConfig{BaseURL: srv.URL, Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	all := filepath.Join(t.TempDir(), "all.jsonl")
	ds, err = Commits(ctx, testSandboxes, e, CommitOptions{Out: all, Auto: true, KeepAll: true, Build: atParent, Model: client, ModelName: "fake"})
	if err != nil || len(ds) != 2 || ds[0].Kind != kindVerified || ds[1].Kind != kindVerified {
		t.Fatalf("Commits(--auto --keep-all) = %+v, %v; want both verified", ds, err)
	}
	if c := ds[0].FixClass; !c.Fix || c.Model != "fake" || c.Score >= 0 ||
		!strings.Contains(strings.Join(c.Reasons, "; "), "model fake: a fix (It repairs how long strings are shown.)") {
		t.Errorf("feature commit with a model: %+v; want the model's verdict (a fix) over the rules' negative score, with its reason", c)
	}
	if c := ds[1].FixClass; !c.Fix || c.Model != "" || !strings.Contains(strings.Join(c.Reasons, "; "), `model classification ignored: no FIX or NOT A FIX in its reply "Hard to say."`) {
		t.Errorf("fix commit with a model that gave no verdict: %+v; want the rules' verdict and a reason saying so", c)
	}
	if n := ds[1].Statement; len(n) != 2 || !strings.Contains(n[0], "rejected: it quotes the fix (\"return a + sep + b\")") || !strings.Contains(n[1], "accepted") {
		t.Errorf("fix commit's statement notes: %q; want the first rejected for quoting the fix, the second accepted", n)
	}
	for _, r := range srv.Requests() {
		if isClassify(r) {
			continue // the classifier may see the fix; no solver sees its verdict's prompt
		}
		if strings.Contains(r.Issue(), "a + sep + b") || !strings.Contains(r.Issue(), "AssertionError") && strings.Contains(r.Issue(), "test_join_sep") {
			t.Errorf("a prompt shows the fix, or not the failure:\n%s", r.Issue())
		}
	}
	tasks, err = task.Load(all)
	if err != nil || len(tasks) != 2 {
		t.Fatalf("tasks with --keep-all: %v, %d; want 2", err, len(tasks))
	}
	if tk := tasks[1]; tk.ProblemStatement != clean+"\n" || tk.StatementSource != "model fake" {
		t.Errorf("fix task with a model: statement %q from %q; want the model's second", tk.ProblemStatement, tk.StatementSource)
	}
}

func TestParseVerdict(t *testing.T) {
	for _, c := range []struct{ reply, verdict, why string }{
		{"FIX\nThe separator was ignored.", "FIX", "The separator was ignored."},
		{"NOT A FIX\nIt adds ellipsize.", "NOT A FIX", "It adds ellipsize."},
		{"**Not a fix**: a new feature", "NOT A FIX", "a new feature"},
		{"  fix. off by one\nin the loop", "FIX", "off by one in the loop"},
		{"FIXED", "", ""},
		{"It is a fix.", "", ""},
		{"", "", ""},
	} {
		v, why := parseVerdict(c.reply)
		if v != c.verdict || why != c.why {
			t.Errorf("parseVerdict(%q) = %q, %q; want %q, %q", c.reply, v, why, c.verdict, c.why)
		}
	}
}
