package tracer

import (
	"fmt"
	"strconv"
	"strings"

	"cwm/internal/trace"
)

// sources reads the files of a recording's code objects, once each.
type sources struct {
	root  string
	read  func(rel string) ([]byte, error)
	files map[string]*sourceFile
}

type sourceFile struct {
	rel   string
	lines []string // without line ends; lines[0] is line 1
	err   error
	// starts are the logical lines' first lines (logicalLines).
	starts []int
}

func newSources(opts EpisodeOptions) *sources {
	return &sources{root: strings.TrimSuffix(opts.Root, "/") + "/", read: opts.Source, files: map[string]*sourceFile{}}
}

// rel is file relative to the repository.
func (s *sources) rel(file string) string { return strings.TrimPrefix(file, s.root) }

func (s *sources) file(file string) *sourceFile {
	if f, ok := s.files[file]; ok {
		return f
	}
	f := &sourceFile{rel: s.rel(file)}
	var data []byte
	if s.read == nil {
		f.err = fmt.Errorf("no source reader")
	} else {
		data, f.err = s.read(f.rel)
	}
	if f.err == nil {
		// CPython counts lines as "\n", "\r\n" or "\r" end them.
		text := strings.TrimRight(normalizeNewlines(string(data)), "\n")
		f.lines = strings.Split(text, "\n")
	}
	s.files[file] = f
	return f
}

// defLine returns the line number of code's def line: its first line, or
// the first def line after the decorators that start at its first line.
func (s *sources) defLine(code Code) (int, bool) {
	f := s.file(code.File)
	if f.err != nil || code.Firstlineno < 1 || code.Firstlineno > len(f.lines) {
		return 0, false
	}
	for ln := code.Firstlineno; ln <= len(f.lines) && ln < code.Firstlineno+50; ln++ {
		line := strings.TrimLeft(f.lines[ln-1], " \t")
		switch {
		case strings.HasPrefix(line, "def ") || strings.HasPrefix(line, "async def "):
			return ln, true
		case ln == code.Firstlineno && !strings.HasPrefix(line, "@"):
			return 0, false // a class body or module code
		}
	}
	return 0, false
}

// build turns a cutting into an Episode: the context, the frames re-depthed
// and re-compressed, the text, its checks.
func (c *cutter) build(b *cutting) Episode {
	t, root := c.t, b.root
	rootCode := t.Codes[root.code]
	ep := Episode{ID: t.Test + "#" + strconv.Itoa(root.ordinal), Test: t.Test,
		Function: Code{File: c.src.rel(rootCode.File), Qualname: rootCode.Qualname, Firstlineno: rootCode.Firstlineno},
		Stats:    EpisodeStats{Depth: b.maxDepth}}
	// Which code each frame runs in: the innermost open call.
	codes := make([]int, 0, len(b.frames))
	kept := make([]int, 0, len(b.frames))
	var stack []int // code indices of the open calls
	for _, i := range b.frames {
		w := t.frames[i]
		if w.event == trace.Call {
			stack = append(stack, w.code)
		}
		ci := -1
		if len(stack) > 0 {
			ci = stack[len(stack)-1]
		}
		if w.event == trace.Return && len(stack) > 0 {
			stack = stack[:len(stack)-1]
		}
		if ci < 0 {
			continue // not in a call: cannot happen in a cut episode
		}
		codes, kept = append(codes, ci), append(kept, i)
	}
	defLine, _ := c.src.defLine(rootCode)
	ctx, err := c.context(rootCode, defLine, codes, kept)
	if err != nil {
		ep.Status, ep.Error = Error, err.Error()
		return ep
	}
	codeIndex := map[int]int{}
	frames := make([]Frame, 0, len(kept))
	for k, i := range kept {
		w, ci := t.frames[i], codes[k]
		code := t.Codes[ci]
		ei, ok := codeIndex[ci]
		if !ok {
			ei = len(ep.Codes)
			codeIndex[ci] = ei
			ep.Codes = append(ep.Codes, Code{File: c.src.rel(code.File), Qualname: code.Qualname, Firstlineno: code.Firstlineno})
		}
		ln := w.lineno
		if i == root.start {
			ln = defLine // a decorated function's call is at its first decorator
		}
		f := Frame{Frame: trace.Frame{Event: w.event, Arg: w.arg, Depth: c.depth[i] - root.depth,
			Lineno: ctx.line(code.File, ln)}, Code: ei}
		if f.Lineno >= 1 && f.Lineno <= len(ctx.lines) {
			f.Source = ctx.lines[f.Lineno-1]
		}
		if len(w.locals) > 0 {
			f.Locals = make([]trace.Local, len(w.locals)/2)
			for j := range f.Locals {
				f.Locals[j] = trace.Local{Name: w.locals[2*j], Value: w.locals[2*j+1]}
			}
		}
		frames = append(frames, f)
	}
	ep.Context = strings.Join(ctx.lines, "\n") + "\n"
	c.finish(&ep, frames, root)
	return ep
}

// finish recompresses the frames, decides the status and makes the text.
func (c *cutter) finish(ep *Episode, frames []Frame, root *call) {
	// ".." was relative to the recording; leaving frames out (stepped-over
	// calls) changes what each frame follows.
	tf := make([]trace.Frame, len(frames))
	for i := range frames {
		tf[i] = frames[i].Frame
	}
	tf = trace.Compress(trace.Expand(tf))
	lines := 0
	for i := range frames {
		frames[i].Frame.Locals = tf[i].Locals
		if frames[i].Event == trace.Line {
			lines++
			if lines > c.opts.MaxEvents {
				ep.Status, ep.Error = TooLong, fmt.Sprintf("more than %d line events", c.opts.MaxEvents)
				frames = frames[:i]
				break
			}
		}
	}
	ep.Frames = frames
	ep.Stats.Frames, ep.Stats.LineEvents = len(frames), min(lines, c.opts.MaxEvents)
	if ep.Status != "" {
		ep.dropped = DropEvents
		return
	}
	if _, tok := indexSpecial(ep.Context); tok != "" {
		ep.Status, ep.Error = Error, "the source contains the special token "+tok+", which the trace text cannot carry in its context"
		return
	}
	if root.end < 0 {
		ep.Status = c.t.Status
		if ep.Status == OK || ep.Status == "" {
			ep.Status = Error
		}
		ep.Error = "recording stopped inside this call"
		if c.t.Error != "" {
			ep.Error += ": " + c.t.Error
		}
		return
	}
	ep.Status, ep.Output = OK, frames[len(frames)-1].Arg
	// An exception frame of the root just before its return: the call
	// ended with the exception (CPython's unwinding return has arg None).
	for i := len(frames) - 2; i >= 0; i-- {
		if frames[i].Depth == 0 {
			if frames[i].Event == trace.Exception {
				ep.Status, ep.Output = Exception, exceptionValue(frames[i].Arg)
			}
			break
		}
	}
	tr := trace.Trace{Context: ep.Context, Frames: tf[:len(frames)]}
	if err := trace.Validate(tr); err != nil {
		ep.Status, ep.Error = Error, fmt.Sprintf("the episode is not a valid trace (a cwm bug): %v", err)
		return
	}
	text := trace.Encode(tr)
	ep.Stats.Bytes = len(text)
	if len(text) > c.opts.MaxBytes {
		ep.Status, ep.Error = TooLong, fmt.Sprintf("trace text of %d bytes is over the limit of %d", len(text), c.opts.MaxBytes)
		ep.dropped = DropBytes
		return
	}
	if _, err := trace.Parse(text); err != nil {
		ep.Status, ep.Error = Error, fmt.Sprintf("the episode's text does not parse (a cwm bug): %v", err)
		return
	}
	ep.Text = text
}

// strip leaves of ep its id, test, function, status, reason and stats:
// the line of an episode that is counted but whose trace is not written.
func (ep *Episode) strip() {
	ep.Context, ep.Codes, ep.Frames, ep.Text, ep.Output = "", nil, nil, "", ""
}

// indexSpecial returns the first special token in s, or "".
func indexSpecial(s string) (int, string) {
	for _, tok := range []string{trace.TokBeginOfText, trace.TokEndOfText, trace.TokFrameSep,
		trace.TokActionSep, trace.TokReturnSep, trace.TokCallSep, trace.TokLineSep,
		trace.TokExceptionSep, trace.TokArgSep, trace.TokTraceContextStart} {
		if i := strings.Index(s, tok); i >= 0 {
			return i, tok
		}
	}
	return -1, ""
}

// exceptionValue returns the exception of a settrace exception text,
// "(<class 'ValueError'>, ValueError('x'), <traceback object>)" giving
// "ValueError('x')" as trace func's output does; other texts unchanged.
func exceptionValue(arg string) string {
	s, ok := strings.CutPrefix(arg, "(<class ")
	if !ok {
		return arg
	}
	s, ok = strings.CutSuffix(s, ", <traceback object>)")
	if !ok {
		return arg
	}
	if _, v, ok := strings.Cut(s, "'>, "); ok {
		return v
	}
	return arg
}
