package tracer

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/env"
	"cwm/internal/jsonl"
	"cwm/internal/shard"
	"cwm/internal/task"
	"cwm/internal/trace"
)

// camelBug is a mutate-fix task of the example repository, as cwm tasks
// mutate makes them: its bug patch lower-cases the head of camel_case
// with upper_first, its gold patch turns it back.
const camelBug = `diff --git a/textkit/case.py b/textkit/case.py
--- a/textkit/case.py
+++ b/textkit/case.py
@@ -34,7 +34,7 @@ def camel_case(name, upper_first=False):
         return ""
     head, rest = parts[0], parts[1:]
     if upper_first:
-        head = head.capitalize()
+        head = head.lower()
     return head + "".join(p.capitalize() for p in rest)
 
 
`

const camelGold = `diff --git a/textkit/case.py b/textkit/case.py
--- a/textkit/case.py
+++ b/textkit/case.py
@@ -34,7 +34,7 @@ def camel_case(name, upper_first=False):
         return ""
     head, rest = parts[0], parts[1:]
     if upper_first:
-        head = head.lower()
+        head = head.capitalize()
     return head + "".join(p.capitalize() for p in rest)
 
 
`

const upperFirst = "tests/test_case.py::test_camel_case_upper_first"

// textkitTask is the task on e, with two PASS_TO_PASS tests: a
// parametrized one and one of a class.
func textkitTask(t *testing.T, e *env.Env) task.Task {
	t.Helper()
	var param, method string
	for _, id := range e.Passing() {
		switch {
		case param == "" && strings.HasPrefix(id, "tests/test_case.py::test_camel_case["):
			param = id
		case method == "" && strings.HasPrefix(id, "tests/test_case.py::Test"):
			method = id
		}
	}
	if param == "" || method == "" || !slices.Contains(e.Passing(), upperFirst) {
		t.Fatalf("the example repository's tests are not the ones this test expects: %v", e.Passing())
	}
	return task.Task{InstanceID: "textkit-camel", EnvID: e.ID, Kind: "mutate", BugPatch: camelBug, Patch: camelGold,
		FailToPass: []string{upperFirst}, PassToPass: []string{param, method, upperFirst}}
}

// TestTraceTaskTests traces a task's tests before and after its fix on the
// example repository: the FAIL_TO_PASS test fails on the buggy tree (its
// trace ends with the AssertionError) and passes on the fixed one, each
// trace starting at the test function with the code under test inlined,
// sources as patched; PASS_TO_PASS once. A rerun writes nothing; a task
// whose gold patch does not apply, or whose environment is missing, gets
// lines that say so.
func TestTraceTaskTests(t *testing.T) {
	e, _ := textkitRecordings(t)
	tk := textkitTask(t, e)
	broken := tk
	broken.InstanceID, broken.Patch = "textkit-broken", strings.ReplaceAll(camelGold, "head.lower()", "head.upper()")
	lost := task.Task{InstanceID: "lost", EnvID: "no-such-env", FailToPass: []string{"tests/test_x.py::test_y"}}
	out := filepath.Join(t.TempDir(), "tests.jsonl")
	opts := TestsOptions{Tasks: []task.Task{tk, broken, lost}, Store: env.NewStore(shared.home), Out: out,
		Workers: 2, Shard: shard.All}
	sbs := env.NewSandboxes(testRuntime(t))
	sum, err := TraceTaskTests(context.Background(), sbs, opts)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]TestTrace{}
	err = jsonl.DecodeInput(out, func(n int, l TestTrace) error {
		got[l.ID] = l
		if why := CheckRecord(&Record{Result: Result{ID: l.ID, Status: l.Status, Context: l.Context,
			Codes: l.Codes, Frames: l.Frames, Text: l.Text, Error: l.Error}}); why != "" {
			t.Errorf("line %d (%s): %s", n, l.ID, why)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for id := range got {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	p2p := tk.PassToPass[:2]
	want := []string{"lost/post/tests/test_x.py::test_y", "lost/pre/tests/test_x.py::test_y",
		"textkit-broken/post/" + p2p[0], "textkit-broken/post/" + p2p[1], "textkit-broken/post/" + upperFirst, "textkit-broken/pre/" + upperFirst,
		"textkit-camel/post/" + p2p[0], "textkit-camel/post/" + p2p[1], "textkit-camel/post/" + upperFirst, "textkit-camel/pre/" + upperFirst}
	slices.Sort(want)
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Fatalf("line ids -want +got:\n%s", diff)
	}

	pre, post := got["textkit-camel/pre/"+upperFirst], got["textkit-camel/post/"+upperFirst]
	for _, c := range []struct {
		l                TestTrace
		status           Status
		outcome, line    string
		affected         bool
		output, phase    string
		taskLines, depth int
	}{
		{pre, Exception, "fail", "        head = head.lower()", true, "AssertionError", "pre", 4, 1},
		{post, OK, "pass", "        head = head.capitalize()", true, "None", "post", 4, 1},
	} {
		l := c.l
		if l.Status != c.status || l.Outcome != c.outcome || l.Affected != c.affected || l.Phase != c.phase ||
			l.TaskLines != c.taskLines || !strings.HasPrefix(l.Output, c.output) {
			t.Errorf("%s: status %s outcome %q affected %v phase %s task_lines %d output %q (%s)", l.ID, l.Status, l.Outcome,
				l.Affected, l.Phase, l.TaskLines, l.Output, l.Error)
		}
		if l.Function != (Code{File: "tests/test_case.py", Qualname: "test_camel_case_upper_first", Firstlineno: 32}) {
			t.Errorf("%s: function %+v, want the test function", l.ID, l.Function)
		}
		if !strings.Contains(l.Text, "<|action_sep|>"+c.line+"\n") {
			t.Errorf("%s: the text does not run %q:\n%s", l.ID, c.line, l.Text)
		}
		if !strings.Contains(l.Context, "def test_camel_case_upper_first(): "+trace.EntryMarker+"\n") || l.Stats.Depth < c.depth {
			t.Errorf("%s: the test function is not the entry, or nothing is inlined (depth %d):\n%s", l.ID, l.Stats.Depth, l.Context)
		}
		first := strings.SplitN(l.Plain, "\n", 2)[0]
		if first != "tests/test_case.py:32 call def test_camel_case_upper_first():" ||
			!strings.Contains(l.Plain, "\ntextkit/case.py:37 line "+c.line+"\n") {
			t.Errorf("%s: plain text:\n%s", l.ID, l.Plain)
		}
	}
	if !strings.Contains(pre.Plain, "!! AssertionError") {
		t.Errorf("pre: the plain text does not end with the assertion:\n%s", pre.Plain)
	}
	for _, id := range p2p {
		l := got["textkit-camel/post/"+id]
		if l.Status != OK || l.Outcome != "pass" || l.Affected || l.Plain == "" {
			t.Errorf("%s: status %s outcome %q affected %v (%s)", l.ID, l.Status, l.Outcome, l.Affected, l.Error)
		}
	}
	if l := got["textkit-broken/post/"+upperFirst]; l.Status != Error || !strings.Contains(l.Error, "the task's patch does not apply") {
		t.Errorf("%s: status %s error %q, want the gold patch not applying", l.ID, l.Status, l.Error)
	}
	if l := got["textkit-broken/pre/"+upperFirst]; l.Status != Exception {
		t.Errorf("%s: status %s (%s), want exception", l.ID, l.Status, l.Error)
	}
	if l := got["lost/pre/tests/test_x.py::test_y"]; l.Status != Error || !strings.Contains(l.Error, `environment "no-such-env"`) {
		t.Errorf("%s: status %s error %q", l.ID, l.Status, l.Error)
	}
	if sum.Lines != 10 || sum.Tasks != 3 {
		t.Errorf("summary %+v", sum)
	}

	again, err := TraceTaskTests(context.Background(), sbs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.Skipped != 3 || again.Lines != 0 {
		t.Errorf("resumed run: skipped %d tasks, wrote %d lines; want 3 and 0", again.Skipped, again.Lines)
	}
}

func TestTestFunction(t *testing.T) {
	for _, tt := range []struct{ id, file, qual string }{
		{"tests/test_a.py::test_b", "tests/test_a.py", "test_b"},
		{"tests/test_a.py::TestX::test_y[1-2]", "tests/test_a.py", "TestX.test_y"},
		{"test_a.py::test_b[a::b]", "test_a.py", "test_b"},
	} {
		if f, q := testFunction(tt.id); f != tt.file || q != tt.qual {
			t.Errorf("testFunction(%q) = %q, %q, want %q, %q", tt.id, f, q, tt.file, tt.qual)
		}
	}
}

func TestPlainText(t *testing.T) {
	ctx := "# file: tests/test_a.py\ndef test_a(): " + trace.EntryMarker + "\n    f(1)\n# file: a.py\ndef f(x):\n    return Weird()\n"
	codes := []Code{{File: "tests/test_a.py", Qualname: "test_a", Firstlineno: 1}, {File: "a.py", Qualname: "f", Firstlineno: 1}}
	lines := strings.Split(ctx, "\n")
	fr := func(ev trace.Event, lineno, depth, code int, arg string, kv ...string) Frame {
		f := Frame{Frame: trace.Frame{Event: ev, Lineno: lineno, Depth: depth, Source: lines[lineno-1], Arg: arg}, Code: code}
		for i := 0; i+1 < len(kv); i += 2 {
			f.Locals = append(f.Locals, trace.Local{Name: kv[i], Value: kv[i+1]})
		}
		return f
	}
	frames := []Frame{
		fr(trace.Call, 2, 0, 0, ""),
		fr(trace.Line, 3, 0, 0, ""),
		fr(trace.Call, 5, 1, 1, "", "x", "1"),
		fr(trace.Line, 6, 1, 1, "", "x", ".."),
		fr(trace.Return, 6, 1, 1, "<two\nlines>"),
		fr(trace.Exception, 3, 0, 0, "(<class 'ValueError'>, ValueError('x'), <traceback object>)"),
		fr(trace.Return, 3, 0, 0, "None"),
	}
	want := `tests/test_a.py:1 call def test_a():
tests/test_a.py:2 line     f(1)
a.py:1 call def f(x): | x=1
a.py:2 line     return Weird()
a.py:2 return     return Weird() | => <two\nlines>
tests/test_a.py:2 exception     f(1) | !! ValueError('x')
tests/test_a.py:2 return     f(1) | => None
`
	if got := PlainText(ctx, codes, frames); got != want {
		t.Errorf("PlainText =\n%s\nwant\n%s", got, want)
	}
}
