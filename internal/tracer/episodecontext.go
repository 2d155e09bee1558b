package tracer

import (
	"fmt"
	"strings"

	"cwm/internal/trace"
)

// What an episode's context holds (EpisodeOptions.Context).
const (
	// ContextDefs: the def blocks the episode's frames run in (a function
	// whole, its decorators included), the headers of the classes and
	// blocks around them, and for code that is not a def (a lambda, a
	// class body) the statements it runs. CWM-SPEC 1.1: "$CONTEXT is the
	// source code; the entry point's def line carries the comment
	// # << START_OF_TRACE"; its worked example's context is the two
	// functions the trace runs.
	ContextDefs = "defs"
	// ContextModule: every module the episode runs in, whole.
	ContextModule = "module"
)

// episodeContext is an episode's context and where each source line of
// the recording is in it.
type episodeContext struct {
	lines []string
	at    map[string][]int // per code file, line-1 -> context line (0: left out)
}

// line returns the context line of line ln of file, 0 when it is not in
// the context.
func (x *episodeContext) line(file string, ln int) int {
	at := x.at[file]
	if ln < 1 || ln > len(at) {
		return 0
	}
	return at[ln-1]
}

// context makes the context of an episode whose kept frames (indices of
// the recording) run in codes: every file with frames in it, the root's
// first, each after a line "# file: PATH", with the lines
// c.opts.Context selects in the file's order; where lines are left out,
// one empty line stands for them. The root's def line is marked.
func (c *cutter) context(root Code, defLine int, codes, kept []int) (*episodeContext, error) {
	order := []string{root.File}
	sel := map[string][]bool{}
	open := func(name string) (*sourceFile, []bool, error) {
		f := c.src.file(name)
		if f.err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", f.rel, f.err)
		}
		s, ok := sel[name]
		if !ok {
			s = make([]bool, len(f.lines))
			sel[name] = s
			if name != root.File {
				order = append(order, name)
			}
		}
		return f, s, nil
	}
	if _, _, err := open(root.File); err != nil {
		return nil, err
	}
	whole := c.opts.Context == ContextModule
	blocks := map[int]bool{} // codes whose def block is selected
	for k, i := range kept {
		code := c.t.Codes[codes[k]]
		f, s, err := open(code.File)
		if err != nil {
			return nil, err
		}
		if whole {
			continue
		}
		if !blocks[codes[k]] {
			blocks[codes[k]] = true
			if d, ok := c.src.defLine(code); ok {
				f.selectRange(s, code.Firstlineno, f.blockEnd(d))
			}
		}
		// A frame outside its code's def block: code that is not a def,
		// or a block the scanner ended early.
		if ln := c.t.frames[i].lineno; ln >= 1 && ln <= len(s) && !s[ln-1] {
			f.selectLogical(s, ln)
		}
	}
	x := &episodeContext{at: map[string][]int{}}
	for _, name := range order {
		f, s := c.src.file(name), sel[name]
		x.lines = append(x.lines, "# file: "+f.rel)
		at := make([]int, len(f.lines))
		prev := 0
		for j := 1; j <= len(f.lines); j++ {
			if !whole && !s[j-1] {
				continue
			}
			if prev > 0 && j > prev+1 && strings.TrimSpace(x.lines[len(x.lines)-1]) != "" {
				x.lines = append(x.lines, "")
			}
			x.lines = append(x.lines, f.lines[j-1])
			at[j-1], prev = len(x.lines), j
		}
		x.at[name] = at
	}
	if n := x.line(root.File, defLine); n > 0 {
		x.lines[n-1] += " " + trace.EntryMarker
	}
	return x, nil
}
