package trace

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Trace)
		index  int    // frame named by the error
		msg    string // part of the message
	}{
		{"no frames", func(t *Trace) { t.Frames = nil }, -1, "no frames"},
		{"token in context", func(t *Trace) { t.Context += "<|frame_sep|>" }, -1, "context contains <|frame_sep|>"},
		{"starts with a line", func(t *Trace) { t.Frames = t.Frames[1:] }, 0, "first frame is a line"},
		{"entry unmarked", func(t *Trace) { t.Frames[0].Source = "def main():" }, 0, "not a def line marked"},
		{"marker on a statement", func(t *Trace) { t.Frames[0].Source = "x = 1 " + EntryMarker }, 0, "not a def line marked"},
		{"unknown event", func(t *Trace) { t.Frames[3].Event = 9 }, 3, "unknown event"},
		{"line with arg", func(t *Trace) { t.Frames[3].Arg = "1" }, 3, "has an arg"},
		{"return with locals", func(t *Trace) { t.Frames[12].Locals = L("y", "6") }, 12, "has locals"},
		{"source not in context", func(t *Trace) { t.Frames[4].Source = "    for j in range(b):" }, 4, "not a line of the context"},
		{"source with trailing space", func(t *Trace) { t.Frames[4].Source += " " }, 4, "not a line of the context"},
		{"wrong lineno", func(t *Trace) { t.Frames[4].Lineno = 2 }, 4, "not line 2"},
		{"duplicate local", func(t *Trace) { t.Frames[4].Locals = L("a", "..", "a", "..") }, 4, `"a" appears twice`},
		{"call with ..", func(t *Trace) { t.Frames[2].Locals = L("a", "..", "b", "3") }, 2, "call frame writes"},
		{"unresolvable ..", func(t *Trace) { t.Frames[4].Locals = L("a", "..", "b", "..", "y", "..") }, 4, `".." with no earlier value`},
		{"invalid UTF-8", func(t *Trace) { t.Frames[4].Locals[2].Value = "\xff" }, 4, "not valid UTF-8"},
		{"unbalanced end", func(t *Trace) { t.Frames = t.Frames[:13] }, 12, "1 scopes open"},
		{"frame after exit", func(t *Trace) { t.Frames = append(t.Frames, line(0, mainRet)) }, 14, "after the entry scope exited"},
		{"extra return", func(t *Trace) {
			t.Frames = append(t.Frames[:13:13], ret(0, mainRet, "6"), ret(0, mainRet, "6"))
		}, 14, "after the entry scope exited"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := paperTrace()
			tc.change(&tr)
			err := Validate(tr)
			var fe *FrameError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate() = %v, want a *FrameError", err)
			}
			if fe.Index != tc.index || !strings.Contains(fe.Msg, tc.msg) {
				t.Errorf("Validate() = %v, want frame %d and %q", err, tc.index, tc.msg)
			}
		})
	}
}

func TestValidateAcceptsLinenos(t *testing.T) {
	tr := paperTrace()
	for i, n := range []int{7, 8, 1, 2, 3, 4, 3, 4, 3, 4, 3, 5, 5, 8} {
		tr.Frames[i].Lineno = n
	}
	if err := Validate(tr); err != nil {
		t.Errorf("Validate() = %v, want nil", err)
	}
}

// A whole program's trace (cwm trace prog) has its module code as the
// entry scope: the marker alone on the context's first line is its call.
func TestValidateProgramEntry(t *testing.T) {
	tr := Trace{Context: EntryMarker + "\nn = int(input())\nprint(n)\n", Frames: []Frame{
		{Event: Call, Source: EntryMarker, Lineno: 1},
		line(0, "n = int(input())"),
		line(0, "print(n)", "n", "3"),
		ret(0, "print(n)", "None"),
	}}
	if err := Validate(tr); err != nil {
		t.Errorf("Validate(program) = %v, want nil", err)
	}
	if _, err := Parse(Encode(tr)); err != nil {
		t.Errorf("Parse(Encode(program)) = %v, want nil", err)
	}
}
