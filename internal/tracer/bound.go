package tracer

import (
	"fmt"
	"unicode/utf8"

	"cwm/internal/trace"
)

// Every record is bounded by the caps, whatever its status: a complete
// trace's text by MaxBytes, and an incomplete one keeps only what fits the
// same bound, so that a 50 MB argument cannot make a 250 MB line.

// Truncate keeps the first max characters of s and says how many were
// dropped, with the marker value texts get: "<... N more chars>".
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s // no more bytes than max, so no more characters
	}
	cut, n := 0, 0
	for cut < len(s) && n < max {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
		n++
	}
	if cut == len(s) {
		return s
	}
	return s[:cut] + fmt.Sprintf("<... %d more chars>", utf8.RuneCountInString(s[cut:]))
}

// textOverhead is the length of the trace text around the context and the
// frames.
var textOverhead = len(trace.TokBeginOfText) + len(trace.TokTraceContextStart) + len(trace.TokFrameSep) + len(trace.TokEndOfText)

// tooLongContext is the result of a function whose context alone is longer
// than the text cap: no trace of it can fit, so it is not run, and only
// the start of the context is kept.
func tooLongContext(id, src string, o *Options) Result {
	return Result{ID: id, Status: TooLong, Context: Truncate(src, o.MaxRepr),
		Error: fmt.Sprintf("the context is %d bytes, over the trace text limit of %d bytes: no trace of it can fit, so it was not run", len(src), o.MaxBytes)}
}

// keepFrames cuts the frames of an incomplete result to the longest prefix
// whose trace text, context included, fits in maxBytes: the tracer's own
// count leaves out the source lines, which a long line repeats in every
// frame of it.
func keepFrames(res *Result, maxBytes int) {
	size := textOverhead + len(res.Context)
	var buf []byte
	for i := range res.Frames {
		buf = trace.AppendFrame(buf[:0], res.Frames[i].Frame)
		if size += len(buf); size > maxBytes {
			res.Error += fmt.Sprintf("; the frames past %d bytes of text are left out (%d of %d kept)", maxBytes, i, len(res.Frames))
			res.Frames = res.Frames[:i]
			res.Stats.Frames = i
			return
		}
	}
}
