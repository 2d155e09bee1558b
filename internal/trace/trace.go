// Package trace is CWM's execution-trace format: the types of a trace, its
// exact text encoding with CWM's special tokens, strict and lenient parsing,
// the ".." compression of unchanged locals, validation, and the
// trace-fidelity comparison of a predicted trace against the truth
// (CWM-SPEC section 1). It does no I/O and knows nothing of Python.
package trace

// Event is what a frame records.
type Event uint8

const (
	Call Event = iota + 1
	Line
	Return
	Exception
)

// Unchanged is the value text of a local whose value is the same as in the
// previous frame of the same scope.
const Unchanged = ".."

// Local is one local variable of a call or line frame.
type Local struct {
	Name string `json:"name"`
	// Value is the Python repr of the value, or Unchanged.
	Value string `json:"value"`
}

// Frame is one step of a trace.
type Frame struct {
	Event Event `json:"event"`
	// Locals are the frame's locals before the line runs, in the order the
	// interpreter lists them (call and line frames only).
	Locals []Local `json:"locals,omitempty"`
	// Source is the source line as written, indentation kept, without the
	// trailing newline.
	Source string `json:"source"`
	// Arg is the returned value or the exception (return and exception
	// frames only).
	Arg string `json:"arg,omitempty"`
	// Lineno is the line number in the context (1-based; 0 when unknown,
	// e.g. after parsing text). It is not part of the text.
	Lineno int `json:"lineno,omitempty"`
	// Depth is the call depth, 0 for the entry point (not part of the
	// text; -1 when unknown).
	Depth int `json:"depth"`
}

// Trace is a whole trace: the source context and the frames.
type Trace struct {
	Context string  `json:"context"`
	Frames  []Frame `json:"frames"`
}
