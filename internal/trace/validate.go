package trace

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// FrameError is a structural problem of a trace. Index is the frame at
// fault, -1 for the trace as a whole.
type FrameError struct {
	Index int
	Msg   string
}

func (e *FrameError) Error() string {
	if e.Index < 0 {
		return "invalid trace: " + e.Msg
	}
	return "invalid trace: frame " + strconv.Itoa(e.Index) + ": " + e.Msg
}

// Validate checks what a trace must satisfy beyond its syntax, and returns
// the first problem as a *FrameError:
//   - the context is valid UTF-8 and holds no special token;
//   - the first frame is the call of the entry point: its source is a def
//     line carrying "# << START_OF_TRACE", or, for a whole program whose
//     module code is the entry scope (cwm trace prog), that marker alone
//     on its line;
//   - every frame has one of the four events; call and line frames have no
//     arg; return and exception frames have no locals;
//   - every source is a line of the context (and, when Lineno is set, the
//     line with that number);
//   - calls and returns balance, no frame follows the exit of the entry
//     scope, and the trace ends with that exit;
//   - local names are unique within a frame; a call frame shows every value
//     in full; ".." appears only where the scope has a value to resolve it;
//   - every string is valid UTF-8, so that Encode writes it faithfully.
//
// A trace that passes round-trips: Parse(Encode(t)) equals t in all the
// text carries.
func Validate(t Trace) error {
	if !utf8.ValidString(t.Context) {
		return &FrameError{-1, "context is not valid UTF-8"}
	}
	if _, tok := indexToken(t.Context); tok != "" {
		return &FrameError{-1, "context contains " + tok}
	}
	if len(t.Frames) == 0 {
		return &FrameError{-1, "no frames"}
	}
	lines := newContextLines(t.Context)
	first := t.Frames[0]
	if first.Event != Call {
		return &FrameError{0, "first frame is a " + first.Event.String() + ", want the call of the entry point"}
	}
	if first.Source != EntryMarker && (!strings.Contains(first.Source, EntryMarker) || !isDefLine(first.Source)) {
		return &FrameError{0, fmt.Sprintf("entry call source %q is not a def line marked %q (nor that marker alone, a program's entry)", first.Source, EntryMarker)}
	}
	var w scopeWalker
	var x expander
	for i := range t.Frames {
		f := &t.Frames[i]
		if i > 0 && w.open == 0 {
			return &FrameError{i, "frame after the entry scope exited"}
		}
		if msg := checkFrame(f, lines); msg != "" {
			return &FrameError{i, msg}
		}
		w.step(f.Event)
		if _, n := x.step(f); n > 0 {
			return &FrameError{i, `".." with no earlier value in the scope`}
		}
	}
	if w.open > 0 {
		return &FrameError{len(t.Frames) - 1, fmt.Sprintf("trace ends with %d scopes open; it must end when the entry scope returns", w.open)}
	}
	return nil
}

// checkFrame checks one frame on its own and returns what is wrong, or "".
func checkFrame(f *Frame, lines contextLines) string {
	if !f.Event.valid() {
		return "unknown event " + f.Event.String()
	}
	if f.Event.hasLocals() && f.Arg != "" {
		return "a " + f.Event.String() + " frame has an arg"
	}
	if !f.Event.hasLocals() && len(f.Locals) > 0 {
		return "a " + f.Event.String() + " frame has locals"
	}
	if !utf8.ValidString(f.Source) || !utf8.ValidString(f.Arg) {
		return "source or arg is not valid UTF-8"
	}
	if !lines.set[f.Source] {
		return fmt.Sprintf("source %q is not a line of the context", f.Source)
	}
	if f.Lineno > 0 && !lines.at(f.Lineno, f.Source) {
		return fmt.Sprintf("source %q is not line %d of the context", f.Source, f.Lineno)
	}
	var names nameIndex
	seen := make([]Local, 0, len(f.Locals))
	for _, l := range f.Locals {
		if !utf8.ValidString(l.Name) || !utf8.ValidString(l.Value) {
			return fmt.Sprintf("local %q is not valid UTF-8", l.Name)
		}
		if names.find(seen, l.Name) >= 0 {
			return fmt.Sprintf("local %q appears twice", l.Name)
		}
		seen = names.add(seen, l)
		if f.Event == Call && l.Value == Unchanged {
			return fmt.Sprintf(`call frame writes local %q as ".."; a call shows every value`, l.Name)
		}
	}
	return ""
}

// contextLines indexes the lines of the context.
type contextLines struct {
	lines []string
	set   map[string]bool
}

func newContextLines(context string) contextLines {
	c := contextLines{lines: strings.Split(context, "\n")}
	c.set = make(map[string]bool, len(c.lines))
	for _, line := range c.lines {
		c.set[line] = true
	}
	return c
}

// at reports whether source is line lineno (1-based) of the context.
func (c contextLines) at(lineno int, source string) bool {
	return lineno <= len(c.lines) && c.lines[lineno-1] == source
}

// isDefLine reports whether a source line is a function definition.
func isDefLine(source string) bool {
	s := strings.TrimLeft(source, " \t")
	return strings.HasPrefix(s, "def ") || strings.HasPrefix(s, "async def ")
}
