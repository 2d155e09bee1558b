// Package traceline is the line schema of a traces file (the output of
// cwm trace func and cwm trace repo) as its readers need it: how a trace
// ended and the fields of a trace line that report, eval fidelity and the
// trace episodes read. It is apart from tracer, which writes the lines,
// so that a reader does not pull in the sandbox and the Python servers.
package traceline

import (
	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/trace"
)

// Status is how tracing a function ended.
type Status string

const (
	// OK: main returned; the trace is complete.
	OK Status = "ok"
	// Exception: main raised; the trace is complete and ends with the
	// exception unwinding main (Output is the exception's repr).
	Exception Status = "exception"
	// Timeout: the wall-clock limit was reached; Frames hold what was
	// recorded, Text is empty.
	Timeout Status = "timeout"
	// TooLong: the trace passed the line-event or byte cap; recording
	// stopped there (Frames hold the prefix, Text is empty) and the program
	// ran on untraced, so Output is known if it finished in time.
	TooLong Status = "too_long"
	// Error: the function could not be traced (it does not compile, its
	// module code raised, it called os._exit or sys.settrace, its process
	// died); Error says why.
	Error Status = "error"
	// Memory: the function's processes exhausted the worker's memory (the
	// sandbox's memory cgroup OOM-killed one of them); Frames hold what was
	// recorded before, if anything. Running past the address-space limit
	// (the tracer's Options.Memory) is not this: the program then gets a
	// MemoryError, which its trace shows.
	Memory Status = "memory"
)

// Complete reports whether a result of this status has a whole trace.
func (s Status) Complete() bool { return s == OK || s == Exception }

// Line is a trace as its readers need it: a line of cwm trace func
// (tracer.Record) or cwm trace repo (tracer.Episode), of which only these
// fields are read.
type Line struct {
	ID      string        `json:"id"`
	Status  string        `json:"status"`
	Context string        `json:"context"`
	Frames  []trace.Frame `json:"frames"`
	// InputSource is where a trace func line's input came from (Source
	// reads it); FuzzOf the function a fuzzed or model-written input is
	// of.
	InputSource Source `json:"input_source"`
	FuzzOf      string `json:"fuzz_of"`
}

// Source is where a trace func line's input came from.
type Source string

const (
	// Given: the input line's own call or input.
	Given Source = "given"
	// Fuzz: found by coverage-guided mutation (trace func --fuzz).
	Fuzz Source = "fuzz"
	// Model: made by a model-written input generator (--input-model).
	Model Source = "model"
)

// Source is where a trace func line's input came from. A line written
// before input_source existed has none: it is fuzz when it has fuzz_of
// (only fuzzing made such lines then), given otherwise.
func (l *Line) Source() Source {
	switch {
	case l.InputSource != "":
		return l.InputSource
	case l.FuzzOf != "":
		return Fuzz
	}
	return Given
}

// Load reads traces files. Traces that are not complete (status other
// than ok and exception, or no frames) cannot be predicted to their end
// and are skipped; skipped says how many. A line without an id is an
// input error.
func Load(paths ...string) (lines []Line, skipped int, err error) {
	for _, p := range paths {
		err := jsonl.DecodeInput(p, func(_ int, r Line) error {
			if r.ID == "" {
				return errkind.New(errkind.Input, "trace without id")
			}
			if !Status(r.Status).Complete() || len(r.Frames) == 0 {
				skipped++
				return nil
			}
			lines = append(lines, r)
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
	}
	return lines, skipped, nil
}
