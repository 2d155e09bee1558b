package narrate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/batch"
	"cwm/internal/eval"
	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/shard"
	"cwm/internal/tracer"
)

// fn is a function to trace: its id, code and call.
type fn struct{ id, code, call string }

// traceFile traces fns in the sandbox and writes their lines as cwm
// trace func does (tracer.Record), so that narrate reads real traces.
func traceFile(t *testing.T, fns []fn) (string, []Trace) {
	t.Helper()
	pool, err := tracer.NewPool(context.Background(), testRT, tracer.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var b strings.Builder
	for _, f := range fns {
		res := pool.Trace(context.Background(), tracer.Func{ID: f.id, Code: f.code, Call: f.call})
		if !res.Status.Complete() {
			t.Fatalf("%s: traced %s: %s", f.id, res.Status, res.Error)
		}
		data, err := json.Marshal(tracer.Record{Result: res, Call: f.call})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(data, '\n'))
	}
	path := filepath.Join(t.TempDir(), "traces.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	traces, err := ReadTraces(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, traces
}

// callOf is the call a narration prompt asks about (the prompt's
// "the result of the call CALL, in one of").
func callOf(prompt string) string {
	_, rest, _ := strings.Cut(prompt, "the result of the call ")
	call, _, _ := strings.Cut(rest, ", in one of")
	return call
}

// scripted is a model that narrates each call with the text replies holds
// for it.
func scripted(t *testing.T, replies map[string]string) *modeltest.Server {
	t.Helper()
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		rep, ok := replies[callOf(r.Issue())]
		if !ok {
			return modeltest.Reply{Status: 400, Error: "no scripted narration of " + callOf(r.Issue())}
		}
		return modeltest.Reply{Content: rep}
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// testScorer checks answers with a 6 s limit rather than CruxEval's 3 s,
// so that a loaded machine does not turn a right answer into a timeout;
// the loop a case narrates runs into it all the same.
func testScorer(t *testing.T) *eval.Scorer {
	t.Helper()
	sc, err := eval.NewScorer(context.Background(), testRT, 2, 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	return sc
}

func testClient(t *testing.T, url string) *model.Client {
	t.Helper()
	c, err := model.NewClient(model.ClientConfig{BaseURL: url, Model: "scripted", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readLines(t *testing.T, path string) map[string]Line {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Line{}
	for _, s := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var l Line
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatal(err)
		}
		if _, dup := out[l.ID]; dup {
			t.Fatalf("%s written twice", l.ID)
		}
		out[l.ID] = l
	}
	return out
}

// narrateAll traces fns and has a model scripted with replies narrate
// them all: the summary, the output, the model server and the traces.
func narrateAll(t *testing.T, fns []fn, replies map[string]string) (*Summary, string, *modeltest.Server, []Trace) {
	t.Helper()
	in, traces := traceFile(t, fns)
	srv := scripted(t, replies)
	out := filepath.Join(t.TempDir(), "narrations.jsonl")
	sum, err := Run(context.Background(), traces, Options{In: in, Out: out, Client: testClient(t, srv.URL), Scorer: testScorer(t), Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	return sum, out, srv, traces
}

// calls are n calls f(0) ... f(n-1) of code, with ids prefix0 ...,
// and their narrations, answering answer(i) for f(i).
func calls(n int, prefix, code string, answer func(i int) int) ([]fn, map[string]string) {
	var fns []fn
	replies := map[string]string{}
	for i := range n {
		call := fmt.Sprintf("f(%d)", i)
		fns = append(fns, fn{fmt.Sprintf("%s%d", prefix, i), code, call})
		replies[call] = narration(call, fmt.Sprintf("[ANSWER] %s == %d [/ANSWER]", call, answer(i)))
	}
	return fns, replies
}

func narration(call, answer string) string {
	return "Let's execute the code step by step.\n1. The function is called.\n2. It returns.\n" + answer
}

// TestKeptShare: a model made consistent on 7 traces of 10 (the other
// three answer one too many) has exactly those 7 kept. CWM-SPEC 1.5:
// "Natural-language variant: an LLM narrates a trace; narrations whose
// final answer disagrees with the real trace are dropped." The model is
// shown the trace in CWM's grammar (CWM-SPEC 1.1:
// "<|begin_of_text|><|trace_context_start|>$CONTEXT<|frame_sep|>" ...
// "<|end_of_text|>"), the line's text as trace func wrote it.
func TestKeptShare(t *testing.T) {
	fns, replies := calls(10, "sq", "def f(x):\n    y = x * x\n    return y\n", func(i int) int {
		if i%3 == 1 { // 1, 4, 7: wrong
			return i*i + 1
		}
		return i * i
	})
	sum, out, srv, traces := narrateAll(t, fns, replies)
	if sum.Kept != 7 || sum.Dropped != 3 || sum.Traces != 10 {
		t.Errorf("Run kept %d, dropped %d of %d, want 7, 3 of 10", sum.Kept, sum.Dropped, sum.Traces)
	}
	if diff := cmp.Diff(map[string]int{Consistent: 7, WrongAnswer: 3}, sum.Reasons); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}
	lines := readLines(t, out)
	for i := range 10 {
		l := lines[fmt.Sprintf("sq%d", i)]
		if want := i%3 != 1; l.Kept != want {
			t.Errorf("%s kept %v, want %v (%s: %s)", l.ID, l.Kept, want, l.Reason, l.Detail)
		}
		if l.Function != "def f(x):\n    y = x * x\n    return y\n" || l.Call != fmt.Sprintf("f(%d)", i) || l.Model != "scripted" || l.Usage.CompletionTokens == 0 {
			t.Errorf("%s: function %q, call %q, model %q, usage %+v", l.ID, l.Function, l.Call, l.Model, l.Usage)
		}
	}
	if n := len(srv.Requests()); n != 10 {
		t.Errorf("the model was asked %d times, want 10", n)
	}
	texts := map[string]string{}
	for _, tr := range traces {
		texts[tr.Call] = tr.Text
	}
	for _, r := range srv.Requests() {
		text := texts[callOf(r.Issue())]
		if !strings.HasPrefix(text, "<|begin_of_text|><|trace_context_start|>def f(x):") || !strings.HasSuffix(text, "<|end_of_text|>") ||
			!strings.Contains(r.Issue(), "[TRACE]\n"+text+"\n[/TRACE]") {
			t.Errorf("the prompt for %s does not hold its trace's CWM text %q", callOf(r.Issue()), text)
		}
	}
}

// TestVerdicts: each way a narration's answer agrees or disagrees with
// the traced call.
func TestVerdicts(t *testing.T) {
	const sq = "def f(x):\n    return x * x\n"
	const idx = "def f(s):\n    return s.index('z')\n"
	const g = "def g(a, b):\n    return [a, b]\n"
	cases := []struct {
		fn         fn
		reply      string
		reason     string
		predicted  string
		raises     string
		wantInLine string // in Detail
	}{
		{fn{"right", sq, "f(3)"}, "[ANSWER] f(3) == 9 [/ANSWER]", Consistent, "9", "", ""},
		{fn{"unclosed", sq, "f(4)"}, "so the answer is\n[ANSWER] f(4) == 16", Consistent, "16", "", ""},
		{fn{"last-block", sq, "f(5)"}, "first guess [ANSWER] f(5) == 10 [/ANSWER], no:\n[ANSWER] f(5) == 25 [/ANSWER]", Consistent, "25", "", ""},
		{fn{"wrong", sq, "f(6)"}, "[ANSWER] f(6) == 35 [/ANSWER]", WrongAnswer, "35", "", "AssertionError"},
		{fn{"not-python", sq, "f(7)"}, "[ANSWER] f(7) == forty-nine [/ANSWER]", WrongAnswer, "forty-nine", "", "NameError"},
		{fn{"no-answer", sq, "f(8)"}, "The function squares 8, giving 64.", NoAnswer, "", "", ""},
		{fn{"empty-answer", sq, "f(9)"}, "[ANSWER] [/ANSWER]", NoAnswer, "", "", ""},
		{fn{"echoed", sq, "f(10)"}, "[ANSWER] f(10) == f(10) [/ANSWER]", CallEchoed, "f(10)", "", ""},
		{fn{"other-entry", g, "g(1, 'a')"}, "[ANSWER] g(1, 'a') == [1, 'a'] [/ANSWER]", Consistent, "[1, 'a']", "", ""},
		{fn{"other-entry-echo", g, "g(2, 'b')"}, "[ANSWER] g(2, 'b') == g(2, 'b') [/ANSWER]", CallEchoed, "g(2, 'b')", "", ""},
		{fn{"raises-right", idx, "f('abc')"}, "[ANSWER] f('abc') raises ValueError [/ANSWER]", Consistent, "", "ValueError", ""},
		{fn{"raises-qualified", idx, "f('xy')"}, "[ANSWER] f('xy') raises builtins.ValueError [/ANSWER]", Consistent, "", "builtins.ValueError", ""},
		{fn{"raises-wrong", idx, "f('q')"}, "[ANSWER] f('q') raises KeyError [/ANSWER]", WrongException, "", "KeyError", "ValueError('substring not found')"},
		{fn{"missed", idx, "f('r')"}, "[ANSWER] f('r') == -1 [/ANSWER]", MissedException, "-1", "", "ValueError"},
		{fn{"unexpected", sq, "f(11)"}, "[ANSWER] f(11) raises TypeError [/ANSWER]", UnexpectedException, "", "TypeError", "returned 121"},
		{fn{"loops", "def f(x):\n    return x\n", "f(12)"}, "[ANSWER] f(12) == [i for i in iter(int, 1) if i] [/ANSWER]", CheckTimeout, "[i for i in iter(int, 1) if i]", "", ""},
	}
	var fns []fn
	replies := map[string]string{}
	for _, c := range cases {
		fns = append(fns, c.fn)
		replies[c.fn.call] = narration(c.fn.call, c.reply)
	}
	sum, out, _, _ := narrateAll(t, fns, replies)
	lines := readLines(t, out)
	kept := 0
	for _, c := range cases {
		l := lines[c.fn.id]
		if l.Reason != c.reason || l.Predicted != c.predicted || l.Raises != c.raises || l.Kept != (c.reason == Consistent) {
			t.Errorf("%s: reason %q, predicted %q, raises %q, kept %v; want %q, %q, %q (detail %q)", c.fn.id, l.Reason, l.Predicted, l.Raises, l.Kept, c.reason, c.predicted, c.raises, l.Detail)
		}
		if !strings.Contains(l.Detail, c.wantInLine) {
			t.Errorf("%s: detail %q, want it to contain %q", c.fn.id, l.Detail, c.wantInLine)
		}
		if c.reason == Consistent {
			kept++
		}
	}
	if sum.Kept != kept || sum.Traces != len(cases) {
		t.Errorf("summary kept %d of %d, want %d of %d", sum.Kept, sum.Traces, kept, len(cases))
	}
}

// TestNotAsked: traces the model is not asked about are results with
// their reason: longer than the context, incomplete, not of a call.
func TestNotAsked(t *testing.T) {
	in, traces := traceFile(t, []fn{{"long", "def f(x):\n    return x\n", "f(1)"}})
	traces = append(traces,
		Trace{ID: "timeout", Status: "timeout", Context: tracer.Context("def f():\n    while True: pass\n", "f()"), Call: "f()"},
		Trace{ID: "episode", Status: "ok", Context: "def test_x():\n    assert 1\n", Text: "<|begin_of_text|>..."})
	srv := scripted(t, nil)
	out := filepath.Join(t.TempDir(), "narrations.jsonl")
	// The smallest prompt is some hundred tokens.
	sum, err := Run(context.Background(), traces, Options{In: in, Out: out, Client: testClient(t, srv.URL), Scorer: testScorer(t), Context: 100})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{TooLong: 1, Incomplete: 1, NotACall: 1}, sum.Reasons); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the model was asked %d times, want 0", n)
	}
	if l := readLines(t, out)["long"]; !strings.Contains(l.Detail, "context 100") {
		t.Errorf("too_long detail %q, want the context named", l.Detail)
	}
}

// TestMaxAndShard: --max counts the lines already in the output; a
// second run with the same output narrates only the rest.
func TestMaxAndShard(t *testing.T) {
	fns, replies := calls(6, "id", "def f(x):\n    return x + 1\n", func(i int) int { return i + 1 })
	in, traces := traceFile(t, fns)
	srv := scripted(t, replies)
	out := filepath.Join(t.TempDir(), "narrations.jsonl")
	opts := Options{In: in, Out: out, Client: testClient(t, srv.URL), Scorer: testScorer(t), Max: 2, Shard: shard.All}
	sum, err := Run(context.Background(), traces, opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Traces != 2 || sum.Missing != 4 {
		t.Errorf("--max 2: %d traces, %d missing, want 2 and 4", sum.Traces, sum.Missing)
	}
	opts.Max = 4
	if sum, err = Run(context.Background(), traces, opts); err != nil {
		t.Fatal(err)
	}
	if sum.Traces != 4 || sum.Resumed != 2 || len(srv.Requests()) != 4 {
		t.Errorf("--max 4 after 2: %d traces, %d resumed, %d requests in all, want 4, 2, 4", sum.Traces, sum.Resumed, len(srv.Requests()))
	}
	opts.Max = 0
	if sum, err = Run(context.Background(), traces, opts); err != nil {
		t.Fatal(err)
	}
	if sum.Kept != 6 || len(srv.Requests()) != 6 || len(readLines(t, out)) != 6 {
		t.Errorf("the rest: kept %d, %d requests in all, want 6 and 6", sum.Kept, len(srv.Requests()))
	}
}

// TestReadTracesErrors: a torn or bad input line names the file and line.
func TestReadTracesErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, text, want string }{
		{"torn", `{"id": "a", "status": "ok"}` + "\n" + `{"id": "b", "sta`, "torn.jsonl:2"},
		{"noid", `{"status": "ok"}` + "\n", `noid.jsonl:1: a trace without "id"`},
		{"dup", `{"id": "a"}` + "\n" + `{"id": "a"}` + "\n", "dup.jsonl:2: trace a: id already used on line 1"},
		{"empty", "\n", "no traces"},
	}
	for _, c := range cases {
		path := filepath.Join(dir, c.name+".jsonl")
		os.WriteFile(path, []byte(c.text), 0o644)
		_, err := ReadTraces(path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadTraces(%s) = %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestParseAnswer: the answer forms as the prompt states them.
func TestParseAnswer(t *testing.T) {
	if !strings.Contains(promptTemplate, "[ANSWER] {call} == VALUE [/ANSWER]") || !strings.Contains(promptTemplate, "[ANSWER] {call} raises EXCEPTION_TYPE [/ANSWER]") {
		t.Fatal("the prompt does not state the answer forms parseAnswer reads")
	}
	cases := []struct {
		in   string
		want answer
		ok   bool
	}{
		{"[ANSWER] f(1) == 'a == b' [/ANSWER]", answer{value: "'a"}, true}, // CruxEval's split on "=="
		{"[ANSWER]\nf(1) == (1, 2)\n[/ANSWER]", answer{value: "(1, 2)"}, true},
		{"[ANSWER] f(1) raises ZeroDivisionError [/ANSWER]", answer{raises: "ZeroDivisionError"}, true},
		{"[ANSWER] f(1) raises [/ANSWER]", answer{}, false},
		{"[ANSWER] 3 [/ANSWER]", answer{}, false},
		{"no block", answer{}, false},
	}
	for _, c := range cases {
		got, ok := parseAnswer(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("parseAnswer(%q) = %+v, %v, want %+v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestShardsMerge: two shards narrate disjoint traces, each marks its
// output finished, and cwm merge's Merge joins them by Stage into one
// output with every trace once.
func TestShardsMerge(t *testing.T) {
	fns, replies := calls(6, "m", "def f(x):\n    return x - 1\n", func(i int) int { return i - 1 })
	in, traces := traceFile(t, fns)
	srv := scripted(t, replies)
	dir := t.TempDir()
	var outs []string
	total := 0
	for i := range 2 {
		out := filepath.Join(dir, fmt.Sprintf("n%d.jsonl", i))
		sum, err := Run(context.Background(), traces, Options{In: in, Out: out, Client: testClient(t, srv.URL), Scorer: testScorer(t),
			Shard: shard.Shard{Index: i, Count: 2}})
		if err != nil {
			t.Fatal(err)
		}
		total += sum.Traces
		outs = append(outs, out)
	}
	if total != 6 || len(srv.Requests()) != 6 {
		t.Fatalf("the two shards narrated %d traces with %d requests, want 6 and 6", total, len(srv.Requests()))
	}
	merged := filepath.Join(dir, "merged.jsonl")
	rep, err := batch.Merge(Stage.MergeSpec(outs, merged))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Lines != 6 || !rep.Written || len(rep.Rerun) > 0 || len(rep.Duplicates) > 0 || len(rep.Misplaced) > 0 {
		t.Errorf("Merge = %+v, want 6 lines written, nothing to rerun", rep)
	}
	if n := len(readLines(t, merged)); n != 6 {
		t.Errorf("the merged output has %d traces, want 6", n)
	}
}
