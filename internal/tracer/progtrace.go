package tracer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"cwm/internal/trace"
)

// ProgContext is the context of a whole program's trace: the marker
// alone on the first line (the module code is the entry scope; CPython
// reports its call at line 0, which is put here), the input as comment
// lines ("# stdin:", then each line after "# "), so that the context says
// what the program reads as a function's context says main's call, then
// the program. The context is what runs: the comment lines change nothing
// but the line numbers, which are the context's.
func ProgContext(program, stdin string) string {
	var b strings.Builder
	b.WriteString(trace.EntryMarker + "\n# stdin:\n")
	in := strings.TrimSuffix(normalizeNewlines(stdin), "\n")
	if in != "" {
		for _, line := range strings.Split(in, "\n") {
			b.WriteString(strings.TrimRight("# "+line, " ") + "\n")
		}
	}
	b.WriteString(strings.TrimRight(normalizeNewlines(program), "\n") + "\n")
	return b.String()
}

// ProgEnd is how a traced program ended beyond its trace.
type ProgEnd struct {
	// Raised is the type name of the exception that ended the program
	// ("" when it ran to its end, or the run did not finish).
	Raised string `json:"raised"`
	// ExitCode is the code of a SystemExit (sys.exit, exit()), 1 for a
	// code that is not an int, nil for no SystemExit.
	ExitCode *int `json:"exit_code"`
}

// TraceProg runs program with stdin as its input under the tracer and
// returns its trace (the module code as the entry scope, the program's
// functions inside it) and how it ended. The pool's MaxCapture is how
// much stdout is kept. As for Trace, problems of the program are the
// Result's status.
func (p *Pool) TraceProg(ctx context.Context, id, program, stdin string) (Result, ProgEnd) {
	src := ProgContext(program, stdin)
	var end ProgEnd
	if tok := trace.SpecialToken(src); tok != "" {
		return Result{ID: id, Status: Error, Context: Truncate(src, p.opts.MaxRepr),
			Error: fmt.Sprintf("the program or its input contains the special token %s, which the trace text cannot carry in its context", tok)}, end
	}
	req := p.request(id, src)
	req.Op, req.Stdin = "prog", stdin
	res := p.result(ctx, req, func(res *Result, line []byte) {
		json.Unmarshal(line, &end) // the response parsed once already
		moduleFrames(res)
	})
	if !res.Status.Complete() && len(res.Context) > p.opts.MaxBytes {
		res.Context = Truncate(res.Context, p.opts.MaxRepr)
	}
	return res, end
}

// moduleFrames makes the module scope's frames CWM's: its call (at line
// 0 in CPython) on the marker line, and without the module's dunder
// names (__name__, __builtins__, ...), which are the interpreter's, not
// the program's. Taking a name out of every frame of its scope leaves
// the ".." of the others as they were.
func moduleFrames(res *Result) {
	for i := range res.Frames {
		f := &res.Frames[i]
		if f.Code < 0 || f.Code >= len(res.Codes) || res.Codes[f.Code].Qualname != "<module>" ||
			res.Codes[f.Code].File != Filename || f.Depth != 0 {
			continue
		}
		if f.Event == trace.Call && f.Lineno == 0 {
			f.Lineno, f.Source = 1, trace.EntryMarker
		}
		kept := f.Locals[:0]
		for _, l := range f.Locals {
			if !(len(l.Name) > 4 && strings.HasPrefix(l.Name, "__") && strings.HasSuffix(l.Name, "__")) {
				kept = append(kept, l)
			}
		}
		f.Locals = kept
		if len(f.Locals) == 0 {
			f.Locals = nil
		}
	}
}
