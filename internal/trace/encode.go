package trace

// The layout of the text, from CWM-SPEC 1.1:
//
//	<|begin_of_text|><|trace_context_start|>$CONTEXT<|frame_sep|>
//	<|call_sep|>$LOCALS<|action_sep|>$SOURCE<|frame_sep|>
//	...
//
// The line breaks in that block are display only: 1.4 lists the frames "one
// per line here (each ends with `<|frame_sep|>` in the text)" and gives the
// real bytes of a return frame as
// "`<|return_sep|><|action_sep|>    return y\n<|arg_sep|>"6"<|frame_sep|>`",
// so after `<|frame_sep|>` the next token follows at once. The only newline
// the grammar itself adds is the one ending each source line ("`$SOURCE` is
// the source line as written (indentation kept) followed by `\n`"). The
// context is therefore followed directly by `<|frame_sep|>`, and the first
// frame token directly by that. Whether a newline precedes that
// `<|frame_sep|>` is up to the context itself: Encode writes Context
// verbatim and never adds or strips a trailing newline.

// Encode returns the exact CWM text of t.
//
// Encode writes what each frame's event can carry and nothing else: Arg of
// a call or line frame and Locals of a return or exception frame are
// dropped, and a frame whose Event is not one of the four is skipped.
// Validate reports all of these, so a trace that validates round-trips
// through Parse.
func Encode(t Trace) string {
	return string(AppendText(make([]byte, 0, textSize(t)), t))
}

// AppendText appends the CWM text of t to dst; see Encode.
func AppendText(dst []byte, t Trace) []byte {
	dst = append(dst, TokBeginOfText...)
	dst = append(dst, TokTraceContextStart...)
	dst = append(dst, t.Context...)
	dst = append(dst, TokFrameSep...)
	for i := range t.Frames {
		dst = appendFrame(dst, &t.Frames[i])
	}
	return append(dst, TokEndOfText...)
}

// AppendFrame appends the text of one frame, ending with `<|frame_sep|>`;
// it is what a caller prompting step by step needs.
func AppendFrame(dst []byte, f Frame) []byte { return appendFrame(dst, &f) }

func appendFrame(dst []byte, f *Frame) []byte {
	if !f.Event.valid() {
		return dst
	}
	dst = append(dst, f.Event.token()...)
	if f.Event.hasLocals() {
		dst = appendLocals(dst, f.Locals)
	}
	dst = append(dst, TokActionSep...)
	dst = append(dst, f.Source...)
	dst = append(dst, '\n')
	if !f.Event.hasLocals() {
		dst = append(dst, TokArgSep...)
		dst = appendString(dst, f.Arg)
	}
	return append(dst, TokFrameSep...)
}

// appendLocals writes the locals as json.dumps writes a dict of str: keys
// in order, ", " between items and ": " after each key.
func appendLocals(dst []byte, locals []Local) []byte {
	dst = append(dst, '{')
	for i, l := range locals {
		if i > 0 {
			dst = append(dst, ',', ' ')
		}
		dst = appendString(dst, l.Name)
		dst = append(dst, ':', ' ')
		dst = appendString(dst, l.Value)
	}
	return append(dst, '}')
}

// textSize estimates the encoded size so Encode allocates once in the
// common case (ASCII values need no escapes beyond the quotes).
func textSize(t Trace) int {
	n := len(TokBeginOfText) + len(TokTraceContextStart) + len(t.Context) +
		len(TokFrameSep) + len(TokEndOfText)
	for i := range t.Frames {
		f := &t.Frames[i]
		n += len(TokExceptionSep) + len(TokActionSep) + len(f.Source) + 1 + len(TokFrameSep)
		if f.Event.hasLocals() {
			n += 2
			for _, l := range f.Locals {
				n += len(l.Name) + len(l.Value) + 8
			}
		} else {
			n += len(TokArgSep) + len(f.Arg) + 2
		}
	}
	return n
}
