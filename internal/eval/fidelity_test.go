package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/model/modeltest"
	"cwm/internal/trace"
	"cwm/internal/tracer"
)

// paperTrace is the paper's worked example (CWM-SPEC 1.4) as cwm's tracer
// writes it: 14 frames.
func paperTrace(t *testing.T) TraceRecord {
	t.Helper()
	pool, err := tracer.NewPool(context.Background(), testRT, tracer.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	res := pool.Trace(context.Background(), tracer.Func{ID: "paper",
		Code: "def f(a,b):\n    y = a\n    for i in range(b):\n        y += y * i\n    return y\n", Call: "f(1,3)"})
	if res.Status != tracer.OK || len(res.Frames) != 14 {
		t.Fatalf("traced %s with %d frames: %s", res.Status, len(res.Frames), res.Error)
	}
	return TraceRecord{ID: "paper", Status: string(res.Status), Context: res.Context, Frames: res.Trace().Frames}
}

// frames writes frames as a completion (without <|end_of_text|>, which
// servers strip).
func frames(fs []trace.Frame) string {
	var b []byte
	for _, f := range fs {
		b = trace.AppendFrame(b, f)
	}
	return string(b)
}

// TestScoreFull scores predictions of the paper's trace, each wrong in a
// chosen way, and wants the exact counts.
func TestScoreFull(t *testing.T) {
	r := paperTrace(t)
	truth := frames(r.Frames)
	if !strings.Contains(truth, `"y": "2"`) {
		t.Fatalf("the trace lacks y = 2:\n%s", truth)
	}
	dropped := append(append([]trace.Frame{}, r.Frames[:11]...), r.Frames[12:]...) // the line "return y"
	cases := []struct {
		name                string
		completion          string
		strict, valid, out  bool
		positional, aligned StepMatch
	}{
		{"exact", truth, true, true, true, StepMatch{14, 14, 14, 14}, StepMatch{14, 14, 14, 14}},
		{"exact with its end", truth + trace.TokEndOfText, true, true, true, StepMatch{14, 14, 14, 14}, StepMatch{14, 14, 14, 14}},
		// y = 3 instead of 2: that frame and the next (whose ".." is
		// that y) are wrong in state; y is restated as 6 after.
		{"one value", strings.Replace(truth, `"y": "2"`, `"y": "3"`, 1), true, true, true, StepMatch{12, 14, 12, 14}, StepMatch{12, 14, 12, 14}},
		// By position, the frames after the gap are compared with the
		// wrong ones (an event or a line differs); aligned, only the
		// dropped frame is missing.
		{"frame dropped", frames(dropped), true, true, true, StepMatch{12, 12, 11, 14}, StepMatch{13, 13, 13, 14}},
		{"wrong output", strings.Replace(truth, `<|arg_sep|>"6"<|frame_sep|>`, `<|arg_sep|>"7"<|frame_sep|>`, 2), true, true, false, StepMatch{12, 14, 12, 14}, StepMatch{12, 14, 12, 14}},
		{"other JSON spacing", strings.Replace(truth, `{"a": "1", "b": "3"}`, `{"a":"1","b":"3"}`, 1), false, true, true, StepMatch{14, 14, 14, 14}, StepMatch{14, 14, 14, 14}},
		// The first frame is lost: by position every frame is compared
		// with the one before it, which matches where a line leaves the
		// state as it was (y += y * 0, the for before return y, the two
		// returns of "6") and where a line and its return share the
		// source; aligned, one frame is missing.
		{"broken token", strings.Replace(truth, trace.TokActionSep, "<|acton_sep|>", 1), false, false, true, StepMatch{3, 1, 0, 14}, StepMatch{13, 13, 13, 14}},
		{"nothing", "", false, false, false, StepMatch{0, 0, 0, 14}, StepMatch{0, 0, 0, 14}},
	}
	for _, c := range cases {
		l := ScoreFull(&r, c.completion)
		if l.Strict != c.strict || l.Valid != c.valid || l.OutputMatch != c.out || l.Positional != c.positional || l.Aligned != c.aligned {
			t.Errorf("%s: strict %v valid %v output %v positional %+v aligned %+v; want %v %v %v %+v %+v",
				c.name, l.Strict, l.Valid, l.OutputMatch, l.Positional, l.Aligned, c.strict, c.valid, c.out, c.positional, c.aligned)
		}
	}
	// By kind: the one-value case misses two int values (y in two
	// frames); every local and return value of the trace is an int.
	l := ScoreFull(&r, strings.Replace(truth, `"y": "2"`, `"y": "3"`, 1))
	ints := l.ByKind[KindInt]
	if len(l.ByKind) != 1 || ints.Total-ints.Match != 2 {
		t.Errorf("by kind %+v", l.ByKind)
	}
	total := 0
	for _, c := range l.ByDecile {
		total += c.Total
	}
	if total != 14 || l.ByRange[0].Total != 10 || l.ByRange[1].Total != 4 {
		t.Errorf("by decile %+v, by range %+v", l.ByDecile, l.ByRange)
	}
}

func TestAlign(t *testing.T) {
	f := func(src ...string) []trace.Frame {
		var fs []trace.Frame
		for _, s := range src {
			fs = append(fs, trace.Frame{Event: trace.Line, Source: s})
		}
		return fs
	}
	cases := []struct {
		pred, truth []trace.Frame
		want        string
	}{
		{f("a", "b", "c"), f("a", "b", "c"), "[0 1 2]"},
		{f("a", "c"), f("a", "b", "c"), "[0 -1 1]"},
		{f("a", "x", "b", "c"), f("a", "b", "c"), "[0 2 3]"},
		{f(), f("a"), "[-1]"},
		{f("x", "a", "y", "b"), f("a", "b"), "[1 3]"},
	}
	for _, c := range cases {
		if got, _ := Align(c.pred, c.truth); fmt.Sprint(got) != c.want {
			t.Errorf("Align(%v, %v) = %v, want %s", c.pred, c.truth, got, c.want)
		}
	}
}

func TestValueKind(t *testing.T) {
	for repr, want := range map[string]string{
		"1": KindInt, "-12": KindInt, "123456789012345678901234567890": KindInt, "1.5": KindFloat, "inf": KindFloat,
		"True": KindBool, "None": KindNone, "'a'": KindStr, `"it's"`: KindStr, "b'x'": KindStr,
		"[1, 2]": KindContainer, "(1,)": KindContainer, "{'a': 1}": KindContainer, "{1, 2}": KindContainer,
		"set()": KindContainer, "<list_iterator object>": KindOther, "<function f.<locals>.g>": KindOther,
	} {
		if got := ValueKind(repr); got != want {
			t.Errorf("ValueKind(%q) = %s, want %s", repr, got, want)
		}
	}
}

// TestRunFidelity runs whole-trace and teacher-forced prediction of the
// paper's trace against a scripted model: whole trace exact, next frame
// right at three of the four steps, then resumes.
func TestRunFidelity(t *testing.T) {
	r := paperTrace(t)
	steps := NextSteps(len(r.Frames), 4)
	if fmt.Sprint(steps) != "[1 4 7 10]" {
		t.Fatalf("steps %v", steps)
	}
	replies := map[string]string{TracePrompt(&r, 0): frames(r.Frames)}
	for _, s := range steps {
		replies[TracePrompt(&r, s)] = string(trace.AppendFrame(nil, r.Frames[s]))
	}
	wrong := r.Frames[10]
	wrong.Locals = append([]trace.Local{}, wrong.Locals...)
	for i := range wrong.Locals {
		if wrong.Locals[i].Name == "y" {
			wrong.Locals[i].Value = "7"
		}
	}
	replies[TracePrompt(&r, 10)] = strings.TrimSuffix(string(trace.AppendFrame(nil, wrong)), trace.TokFrameSep)
	srv, err := modeltest.Start(func(q *modeltest.Request) modeltest.Reply {
		rep, ok := replies[q.Prompt]
		if !ok {
			return modeltest.Reply{Status: 400, Error: "unscripted"}
		}
		return modeltest.Text(rep)
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "fid.jsonl")
	opts := FidelityOptions{Traces: []TraceRecord{r}, Full: true, Next: 4, Client: testClient(t, srv.URL), Out: out, Concurrency: 3}
	sum, err := RunFidelity(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := Rates{1, 1, 1}
	if sum.Traces != 1 || sum.Strict != 1 || sum.Output != 1 || sum.Positional != want || sum.Aligned != want ||
		sum.Steps != 4 || sum.NextValid != 1 || sum.Next != (Rates{0.75, 1, 0.75}) {
		b, _ := json.Marshal(sum)
		t.Fatalf("summary %s", b)
	}
	sum, err = RunFidelity(context.Background(), opts)
	if err != nil || sum.Resumed != 5 || len(srv.Requests()) != 5 {
		t.Fatalf("resumed: %v %+v, %d requests", err, sum, len(srv.Requests()))
	}
}
