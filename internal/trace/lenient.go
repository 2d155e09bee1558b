package trace

import (
	"strings"
)

// LenientStats says how far a text was from what Encode writes.
type LenientStats struct {
	// Frames is the number of frames recovered.
	Frames int
	// FormatErrors counts malformed frames dropped and runs of stray bytes
	// skipped; ValidFormat is FormatErrors == 0.
	FormatErrors int
	// SkippedBytes is the number of bytes dropped with those errors.
	SkippedBytes int
	// Repairs counts frames kept although Encode would write them
	// differently: JSON in another spelling (spacing, raw UTF-8, escapes),
	// a missing locals object, a missing newline after the source, a
	// missing final `<|frame_sep|>`. json.loads and the reference consumer
	// accept all of these, so they are not format errors.
	Repairs int
	// MissingPrefix is set when the text does not open with
	// `<|begin_of_text|><|trace_context_start|>` and a context: a model
	// continuing a prompt emits only frames.
	MissingPrefix bool
	// MissingEnd is set when there is no `<|end_of_text|>`, as when the
	// inference server strips its stop token.
	MissingEnd bool
	// TrailingBytes is the length of what follows `<|end_of_text|>`,
	// which is ignored.
	TrailingBytes int
	// Errors holds the first few format errors, for diagnostics.
	Errors []SyntaxError
}

// ValidFormat reports whether the text had no format errors (repairs,
// a missing prefix or a missing end do not count).
func (s LenientStats) ValidFormat() bool { return s.FormatErrors == 0 }

// maxLenientErrors bounds LenientStats.Errors: the count is what matters,
// the first few explain it.
const maxLenientErrors = 8

// ParseLenient recovers every well-formed frame of a text, typically a
// model's output. After a malformed frame or stray bytes it resynchronises
// at the next frame token (or `<|end_of_text|>`), counting one format error
// per malformed frame or run of stray bytes. It tolerates a missing
// `<|end_of_text|>` and a missing begin/context prefix (then Context is
// ""); a lone `<|frame_sep|>` opening a frames-only text is the
// start-of-trace sentinel and is skipped. Depth is set as Parse sets it,
// over the recovered frames. For a text Parse accepts, ParseLenient
// returns the same trace and stats with only Frames set.
func ParseLenient(text string) (Trace, LenientStats) {
	var t Trace
	var st LenientStats
	fail := func(err *SyntaxError, skipped int) {
		st.FormatErrors++
		st.SkippedBytes += skipped
		if len(st.Errors) < maxLenientErrors {
			st.Errors = append(st.Errors, *err)
		}
	}

	i := 0
	if strings.HasPrefix(text, TokBeginOfText) {
		i = len(TokBeginOfText)
	}
	if strings.HasPrefix(text[i:], TokTraceContextStart) {
		i += len(TokTraceContextStart)
		n := strings.Index(text[i:], TokFrameSep)
		if n < 0 {
			// Everything is context, and no frame follows.
			t.Context = text[i:]
			fail(errAt(len(text), "context not ended by "+TokFrameSep), 0)
			st.MissingEnd = true
			return t, st
		}
		t.Context = text[i : i+n]
		i += n + len(TokFrameSep)
	} else {
		st.MissingPrefix = true
		if strings.HasPrefix(text[i:], TokFrameSep) {
			i += len(TokFrameSep)
		}
	}

	var scratch []byte
	ended := false
	for i < len(text) {
		if strings.HasPrefix(text[i:], TokEndOfText) {
			i += len(TokEndOfText)
			st.TrailingBytes = len(text) - i
			ended = true
			break
		}
		if _, n := eventAt(text[i:]); n > 0 {
			f, next, err := parseFrame(text, i, false)
			if err == nil {
				t.Frames = append(t.Frames, f)
				scratch = appendFrame(scratch[:0], &f)
				if string(scratch) != text[i:next] {
					st.Repairs++
				}
				i = next
				continue
			}
			next = resync(text, i+n)
			fail(err, next-i)
			i = next
			continue
		}
		next := resync(text, i)
		fail(errAt(i, "stray bytes between frames"), next-i)
		i = next
	}
	st.MissingEnd = !ended
	st.Frames = len(t.Frames)
	setDepths(t.Frames)
	return t, st
}

// resync returns the offset of the next frame token or `<|end_of_text|>`
// at or after i, or len(s).
func resync(s string, i int) int {
	for {
		k := strings.Index(s[i:], "<|")
		if k < 0 {
			return len(s)
		}
		i += k
		if _, n := eventAt(s[i:]); n > 0 || strings.HasPrefix(s[i:], TokEndOfText) {
			return i
		}
		i += 2
	}
}
