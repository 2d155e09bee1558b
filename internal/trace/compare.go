package trace

import (
	"fmt"
	"strings"
)

// Fidelity is how well a predicted trace follows the true one: the
// trace-prediction metrics of CWM-SPEC 1.6.
//
// Frames are aligned position by position: frame i of the prediction is
// compared with frame i of the truth, after both are expanded (".."
// resolved). There is no re-synchronisation after an inserted or dropped
// frame, so one such slip makes every later position a mismatch; that is
// deliberate, since a model that loses a step has mispredicted the
// execution from there on. A position present in only one trace is a
// mismatch. Depth and Lineno are not compared (the text does not carry
// them), nor is the context.
type Fidelity struct {
	// Steps is the number of frames of the truth.
	Steps int
	// Positions is the number of aligned positions, the larger of the two
	// frame counts; the fractions below are over Positions, so extra
	// predicted frames lower them as missing ones do.
	Positions int
	// StateMatches counts positions whose event, locals and arg are equal.
	// Locals compare as a mapping, in any key order, as Python compares
	// dicts; for return and exception frames the arg is the state.
	StateMatches int
	StateExact   float64
	// ActionMatches counts positions whose source line, the action, is
	// equal.
	ActionMatches int
	ActionExact   float64
	// OutputMatch is set when both traces exit the entry scope the same
	// way: the same returned value, or the same exception before the
	// unwinding return.
	OutputMatch bool
	// ValidFormat is whether the prediction parsed without format errors.
	// Compare cannot know and sets it; CompareText sets it from
	// ParseLenient.
	ValidFormat bool
	// FirstDivergence is the first position whose frames differ in event,
	// source, arg or locals, or exist in only one trace; -1 if none.
	FirstDivergence int
	// Diff describes that first divergence; "" if none.
	Diff string
}

// Compare measures pred against truth; see Fidelity.
func Compare(pred, truth Trace) Fidelity {
	p, q := Expand(pred.Frames), Expand(truth.Frames)
	fd := Fidelity{
		Steps:           len(q),
		Positions:       max(len(p), len(q)),
		ValidFormat:     true,
		FirstDivergence: -1,
	}
	for i := range min(len(p), len(q)) {
		a, b := &p[i], &q[i]
		state := a.Event == b.Event && a.Arg == b.Arg && sameLocals(a.Locals, b.Locals)
		action := a.Source == b.Source
		if state {
			fd.StateMatches++
		}
		if action {
			fd.ActionMatches++
		}
		if (!state || !action) && fd.FirstDivergence < 0 {
			fd.FirstDivergence = i
			fd.Diff = fmt.Sprintf("frame %d: %s", i, frameDiff(a, b))
		}
	}
	if fd.FirstDivergence < 0 && len(p) != len(q) {
		i := min(len(p), len(q))
		fd.FirstDivergence = i
		if len(p) < len(q) {
			fd.Diff = fmt.Sprintf("frame %d: prediction ends; want %s %q", i, q[i].Event, q[i].Source)
		} else {
			fd.Diff = fmt.Sprintf("frame %d: extra %s %q in prediction", i, p[i].Event, p[i].Source)
		}
	}
	fd.StateExact, fd.ActionExact = 1, 1
	if fd.Positions > 0 {
		fd.StateExact = float64(fd.StateMatches) / float64(fd.Positions)
		fd.ActionExact = float64(fd.ActionMatches) / float64(fd.Positions)
	}
	po, pok := entryOutput(p)
	qo, qok := entryOutput(q)
	fd.OutputMatch = pok && qok && po == qo
	return fd
}

// CompareText parses a predicted text leniently and measures it against
// truth, with ValidFormat from the parse.
func CompareText(predText string, truth Trace) Fidelity {
	pred, st := ParseLenient(predText)
	fd := Compare(pred, truth)
	fd.ValidFormat = st.ValidFormat()
	return fd
}

// sameLocals compares two locals lists as Python compares dicts.
func sameLocals(a, b []Local) bool {
	if len(a) != len(b) {
		return false
	}
	for j, l := range a {
		if v, ok := lookup(b, l.Name, j); !ok || v != l.Value {
			return false
		}
	}
	return true
}

// frameDiff names the first difference between two frames.
func frameDiff(a, b *Frame) string {
	switch {
	case a.Event != b.Event:
		return fmt.Sprintf("event %s, want %s", a.Event, b.Event)
	case a.Source != b.Source:
		return fmt.Sprintf("source %q, want %q", a.Source, b.Source)
	case a.Arg != b.Arg:
		return fmt.Sprintf("arg %q, want %q", a.Arg, b.Arg)
	}
	for j, l := range b.Locals {
		v, ok := lookup(a.Locals, l.Name, j)
		switch {
		case !ok:
			return fmt.Sprintf("local %s missing, want %q", l.Name, l.Value)
		case v != l.Value:
			return fmt.Sprintf("local %s = %q, want %q", l.Name, v, l.Value)
		}
	}
	for j, l := range a.Locals {
		if _, ok := lookup(b.Locals, l.Name, j); !ok {
			return fmt.Sprintf("unexpected local %s = %q", l.Name, l.Value)
		}
	}
	return "locals differ" // a repeated name; Validate rejects those
}

// entryOutput is how the entry scope exits: the arg of its return frame, or
// the exception that precedes that return (whose own arg is then "None").
func entryOutput(frames []Frame) (string, bool) {
	var w scopeWalker
	for i := range frames {
		if w.step(frames[i].Event) != 0 || frames[i].Event != Return {
			continue
		}
		if i > 0 && frames[i-1].Event == Exception && w.open == 0 {
			return "raise " + frames[i-1].Arg, true
		}
		return "return " + frames[i].Arg, true
	}
	return "", false
}

// EntryOutput is how the entry scope of frames exits: the value text of
// its return frame, or (raised) of the exception that precedes that
// return; ok is false when the entry scope never returns.
func EntryOutput(frames []Frame) (value string, raised, ok bool) {
	s, ok := entryOutput(frames)
	if v, r := strings.CutPrefix(s, "raise "); r {
		return v, true, ok
	}
	return strings.TrimPrefix(s, "return "), false, ok
}
