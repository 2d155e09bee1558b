package trace

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Taking the paper's frames one by one resolves them as Expand does, and
// a prediction written with ".." matches the true frame it resolves to.
func TestStepperFollowsExpand(t *testing.T) {
	tr := Trace{Context: paperContext, Frames: Compress(paperFull().Frames)}
	want := Expand(tr.Frames)
	var s Stepper
	for i, f := range tr.Frames {
		r := s.Resolve(f)
		if st, ac, diff := MatchFrame(r, want[i]); !st || !ac {
			t.Errorf("frame %d resolved before it is taken: %s", i, diff)
		}
		if got := s.Take(f); !cmp.Equal(got, want[i]) {
			t.Errorf("Take(frame %d) = %+v, want %+v", i, got, want[i])
		}
	}
}

// A wrong value, a wrong line and a wrong event are told apart; a clone
// goes on without the original.
func TestMatchFrameAndClone(t *testing.T) {
	tr := Trace{Context: paperContext, Frames: Compress(paperFull().Frames)}
	var s Stepper
	for _, f := range tr.Frames[:5] {
		s.Take(f)
	}
	truth := s.Resolve(tr.Frames[5]) // y += y * i with i = 0
	c := s.Clone()
	for _, f := range tr.Frames[5:8] {
		c.Take(f)
	}
	pred := func(text string) Frame {
		p, st := ParseLenient(text)
		if len(p.Frames) != 1 || !st.ValidFormat() {
			t.Fatalf("ParseLenient(%q) = %+v, %+v", text, p, st)
		}
		return s.Resolve(p.Frames[0])
	}
	tests := []struct {
		text          string
		state, action bool
	}{
		{`<|line_sep|>{"a": "..", "b": "..", "y": "..", "i": "0"}<|action_sep|>        y += y * i` + "\n<|frame_sep|>", true, true},
		{`<|line_sep|>{"a": "1", "b": "3", "y": "1", "i": "0"}<|action_sep|>        y += y * i` + "\n<|frame_sep|>", true, true},
		{`<|line_sep|>{"a": "..", "b": "..", "y": "..", "i": "1"}<|action_sep|>        y += y * i` + "\n<|frame_sep|>", false, true},
		{`<|line_sep|>{"a": "..", "b": "..", "y": "..", "i": "0"}<|action_sep|>    return y` + "\n<|frame_sep|>", true, false},
		{`<|return_sep|><|action_sep|>        y += y * i` + "\n<|arg_sep|>\"1\"<|frame_sep|>", false, true},
	}
	for _, tt := range tests {
		st, ac, diff := MatchFrame(pred(tt.text), truth)
		if st != tt.state || ac != tt.action || (diff == "") != (st && ac) {
			t.Errorf("MatchFrame(%q) = %v, %v, %q; want %v, %v", tt.text, st, ac, diff, tt.state, tt.action)
		}
	}
	// The clone has moved on to i = 1; the original has not seen i bound.
	if got := c.Resolve(Frame{Event: Line, Locals: []Local{{"i", Unchanged}}}); got.Locals[0].Value != "1" {
		t.Errorf("clone resolves i to %q, want 1", got.Locals[0].Value)
	}
	if got := s.Resolve(Frame{Event: Line, Locals: []Local{{"i", Unchanged}}}); got.Locals[0].Value != Unchanged {
		t.Errorf("original resolves i to %q after the clone moved on, want it unresolved", got.Locals[0].Value)
	}
}
