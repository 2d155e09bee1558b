// Package tracer produces CWM execution traces (CWM-SPEC section 1) of
// Python functions by running an embedded sys.settrace tracer (tracer.py,
// Python 3.9 to 3.13, standard library only) inside cwm sandboxes.
//
// A Pool keeps N workers, each a fork server (server.py) in its own sandbox.
// The server imports everything once and forks a runner that traces
// functions one after another; a runner is replaced by a fresh fork of the
// pristine server as soon as a function changes process state a later
// function could observe, after Options.Recycle functions, and after any
// timeout or death (Recycle 1: a new fork per function). A function that
// hangs, crashes or exhausts memory ends as a Result with a status and a
// reason; it never stops the pool.
//
// Repository tracing (repo.go, episodes.go) records each test of a
// repository's suite in sandboxes on its environment (TraceTests, with
// repotrace.py loaded into the test runner) and cuts the recordings into
// function-level episodes (Cut, CWM-SPEC 1.5).
package tracer

import (
	"embed"
	"strings"

	"cwm/internal/trace"
	"cwm/internal/traceline"
)

// pyFiles are written into each worker's sandbox. They are stored under
// names no traced program would import by accident, because the script
// directory is on sys.path.
//
//go:embed tracer.py record.py fragments.py values.py cpython.py server.py mutate.py repotrace.py prog.py qualname.py flocals.py
var pyFiles embed.FS

// pyDir is where the Python files live inside a sandbox.
const pyDir = "/opt/cwm-tracer"

var pyNames = map[string]string{
	"tracer.py":    "_cwm_tracer.py",
	"record.py":    "_cwm_record.py",
	"fragments.py": "_cwm_fragments.py",
	"cpython.py":   "_cwm_cpython.py",
	"values.py":    "_cwm_values.py",
	"server.py":    "_cwm_server.py",
	"mutate.py":    "_cwm_mutate.py",
	"repotrace.py": "_cwm_repotrace.py",
	"prog.py":      "_cwm_prog.py",
	"qualname.py":  "_cwm_qualname.py",
	"flocals.py":   "_cwm_flocals.py",
}

// Filename is the file name the traced context is compiled under. Only code
// compiled under it is in scope (library code produces no frames).
const Filename = "<cwm-trace>"

// Func is one function to trace: Code defines it, Call is the expression
// the entry point returns, e.g. "f(1,3)".
type Func struct {
	ID   string
	Code string
	Call string
}

// Context is the source the trace is made of: the code, a blank line, and a
// main() marked as the entry point that returns the call, as in the paper's
// worked example (CWM-SPEC 1.4). Line endings become "\n", as CPython counts
// lines, so that every source line of a frame is a line of the context.
func Context(code, call string) string {
	code = normalizeNewlines(code)
	call = normalizeNewlines(call)
	return strings.TrimRight(code, "\n") + "\n\ndef main(): " + trace.EntryMarker + "\n    return " + call + "\n"
}

func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// Status is how tracing a function ended (the traces file's schema,
// traceline.Status).
type Status = traceline.Status

// The statuses, traceline's.
const (
	OK        = traceline.OK
	Exception = traceline.Exception
	Timeout   = traceline.Timeout
	TooLong   = traceline.TooLong
	Error     = traceline.Error
	Memory    = traceline.Memory
)

// Code identifies the code object of a frame, so that episodes can be cut
// out of a trace by function.
type Code struct {
	File        string `json:"file"`
	Qualname    string `json:"qualname"`
	Firstlineno int    `json:"firstlineno"`
}

// Frame is a trace frame with the index of its code in Result.Codes.
type Frame struct {
	trace.Frame
	Code int `json:"code"`
}

// Stats are the measurements of one traced function.
type Stats struct {
	Frames     int `json:"frames"`
	LineEvents int `json:"line_events"`
	// Bytes is the length of Text, or for an incomplete trace the tracer's
	// lower bound of the text it recorded.
	Bytes   int     `json:"bytes"`
	Seconds float64 `json:"seconds"`
	// StdoutChars and StderrChars count what the program printed (only the
	// first Options.MaxCapture characters are kept in Result).
	StdoutChars int `json:"stdout_chars"`
	StderrChars int `json:"stderr_chars"`
}

// Result is the outcome of tracing one function.
type Result struct {
	ID      string  `json:"id"`
	Status  Status  `json:"status"`
	Context string  `json:"context"`
	Codes   []Code  `json:"codes"`
	Frames  []Frame `json:"frames"`
	// Text is the complete CWM text, from <|begin_of_text|> to
	// <|end_of_text|>, for complete traces only.
	Text string `json:"text"`
	// Output is the value text of what main returned, or of the exception
	// it raised ("" when unknown).
	Output string `json:"output"`
	Error  string `json:"error"`
	// Leak names the process state the function changed (threads left
	// running, a module imported, ...), for which its runner was replaced.
	Leak   string `json:"leak"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	Stats  Stats  `json:"stats"`
}

// Every field of Result is always written, empty or not: loaders that infer
// a schema per block of lines (pyarrow's JSON reader under Hugging Face
// datasets) then see the same columns in every block.

// Trace returns the frames as a trace.Trace.
func (r *Result) Trace() trace.Trace {
	t := trace.Trace{Context: r.Context, Frames: make([]trace.Frame, len(r.Frames))}
	for i := range r.Frames {
		t.Frames[i] = r.Frames[i].Frame
	}
	return t
}
