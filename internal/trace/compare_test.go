package trace

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCompareIdentical(t *testing.T) {
	for _, tr := range []Trace{paperTrace(), excTrace()} {
		n := len(tr.Frames)
		want := Fidelity{
			Steps: n, Positions: n, StateMatches: n, StateExact: 1, ActionMatches: n, ActionExact: 1,
			OutputMatch: true, ValidFormat: true, FirstDivergence: -1,
		}
		if diff := cmp.Diff(want, Compare(tr, tr)); diff != "" {
			t.Errorf("Compare(t, t) mismatch (-want +got):\n%s", diff)
		}
		// The compressed and the full form are the same trace.
		full := Trace{Context: tr.Context, Frames: Expand(tr.Frames)}
		if diff := cmp.Diff(want, Compare(full, tr)); diff != "" {
			t.Errorf("Compare(expanded, compressed) mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, CompareText(Encode(tr), tr)); diff != "" {
			t.Errorf("CompareText(Encode(t), t) mismatch (-want +got):\n%s", diff)
		}
	}
}

func TestCompareAltered(t *testing.T) {
	truth := paperTrace()
	tests := []struct {
		name   string
		change func([]Frame) []Frame // on the expanded frames
		want   Fidelity
	}{
		{
			name:   "one local",
			change: func(f []Frame) []Frame { f[8].Locals[2].Value = "3"; return f },
			want: Fidelity{Steps: 14, Positions: 14, StateMatches: 13, StateExact: 13.0 / 14, ActionMatches: 14, ActionExact: 1,
				OutputMatch: true, ValidFormat: true, FirstDivergence: 8, Diff: `frame 8: local y = "3", want "2"`},
		},
		{
			name:   "key order is not a difference",
			change: func(f []Frame) []Frame { f[5].Locals[0], f[5].Locals[1] = f[5].Locals[1], f[5].Locals[0]; return f },
			want: Fidelity{Steps: 14, Positions: 14, StateMatches: 14, StateExact: 1, ActionMatches: 14, ActionExact: 1,
				OutputMatch: true, ValidFormat: true, FirstDivergence: -1},
		},
		{
			name:   "a line",
			change: func(f []Frame) []Frame { f[6].Source = fBody; return f },
			want: Fidelity{Steps: 14, Positions: 14, StateMatches: 14, StateExact: 1, ActionMatches: 13, ActionExact: 13.0 / 14,
				OutputMatch: true, ValidFormat: true, FirstDivergence: 6, Diff: `frame 6: source "        y += y * i", want "    for i in range(b):"`},
		},
		{
			name:   "the output",
			change: func(f []Frame) []Frame { f[13].Arg = "7"; return f },
			want: Fidelity{Steps: 14, Positions: 14, StateMatches: 13, StateExact: 13.0 / 14, ActionMatches: 14, ActionExact: 1,
				ValidFormat: true, FirstDivergence: 13, Diff: `frame 13: arg "7", want "6"`},
		},
		{
			name:   "missing frames",
			change: func(f []Frame) []Frame { return f[:10] },
			want: Fidelity{Steps: 14, Positions: 14, StateMatches: 10, StateExact: 10.0 / 14, ActionMatches: 10, ActionExact: 10.0 / 14,
				ValidFormat: true, FirstDivergence: 10, Diff: `frame 10: prediction ends; want line "    for i in range(b):"`},
		},
		{
			name:   "an extra frame",
			change: func(f []Frame) []Frame { return append(f, line(0, mainRet)) },
			want: Fidelity{Steps: 14, Positions: 15, StateMatches: 14, StateExact: 14.0 / 15, ActionMatches: 14, ActionExact: 14.0 / 15,
				OutputMatch: true, ValidFormat: true, FirstDivergence: 14, Diff: `frame 14: extra line "    return f(1,3)" in prediction`},
		},
		{
			name: "a dropped frame shifts the rest",
			change: func(f []Frame) []Frame {
				return append(f[:3:3], f[4:]...)
			},
			// States 5, 10 and 12 happen to equal their neighbours.
			want: Fidelity{Steps: 14, Positions: 14, StateMatches: 6, StateExact: 6.0 / 14, ActionMatches: 4, ActionExact: 4.0 / 14,
				OutputMatch: true, ValidFormat: true, FirstDivergence: 3, Diff: `frame 3: source "    for i in range(b):", want "    y = a"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pred := Trace{Context: truth.Context, Frames: tc.change(Expand(truth.Frames))}
			if diff := cmp.Diff(tc.want, Compare(pred, truth)); diff != "" {
				t.Errorf("Compare() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompareOutputOfAnException(t *testing.T) {
	truth := excTrace()
	pred := Expand(truth.Frames)
	pred[8].Arg = "(<class 'KeyError'>, KeyError('z'), <traceback object>)"
	pred = append(pred[:9:9], ret(0, "        return find(s, 'z')", "None"))
	got := Compare(Trace{Frames: pred}, truth)
	if got.OutputMatch {
		t.Errorf("Compare() OutputMatch = true for an uncaught exception against a return")
	}
	if got.FirstDivergence != 8 || !strings.Contains(got.Diff, "KeyError") {
		t.Errorf("Compare() first divergence = %d %q, want frame 8 naming the exception", got.FirstDivergence, got.Diff)
	}
	if out, ok := entryOutput(pred); !ok || !strings.HasPrefix(out, "raise (<class 'KeyError'>") {
		t.Errorf("entryOutput() = %q, %v, want the raised KeyError", out, ok)
	}
}

func TestCompareTextWithFormatErrors(t *testing.T) {
	truth := paperTrace()
	_, frames := paperFrames()
	got := CompareText("garbage"+frames, truth)
	if got.ValidFormat || got.StateMatches != 14 || got.FirstDivergence != -1 {
		t.Errorf("CompareText(garbage + frames) = %+v, want ValidFormat false and all 14 states matching", got)
	}
}

func TestCompareEmpty(t *testing.T) {
	got := Compare(Trace{}, Trace{})
	if got.StateExact != 1 || got.ActionExact != 1 || got.FirstDivergence != -1 || got.OutputMatch {
		t.Errorf("Compare(empty, empty) = %+v, want exact 1, no divergence, no output", got)
	}
}

func TestEntryOutputAndSpecialToken(t *testing.T) {
	ret := []Frame{{Event: Call, Source: "def main():"}, {Event: Return, Source: "    return 1", Arg: "1"}}
	if v, raised, ok := EntryOutput(ret); v != "1" || raised || !ok {
		t.Errorf("return: %q %v %v", v, raised, ok)
	}
	exc := []Frame{{Event: Call, Source: "def main():"}, {Event: Exception, Source: "    1/0", Arg: "(ZeroDivisionError)"}, {Event: Return, Source: "    1/0", Arg: "None"}}
	if v, raised, ok := EntryOutput(exc); v != "(ZeroDivisionError)" || !raised || !ok {
		t.Errorf("exception: %q %v %v", v, raised, ok)
	}
	if _, _, ok := EntryOutput(ret[:1]); ok {
		t.Error("a trace that never returns has an output")
	}
	if SpecialToken("a <|arg_sep|> b") != TokArgSep || SpecialToken("<|x|>") != "" {
		t.Error("SpecialToken")
	}
}
