package trace

import (
	"strconv"
	"strings"
)

// The special tokens of CWM-SPEC 1.1, written as the literal strings our
// files use. Every token begins with "<|", which the parsers use to find
// candidates quickly.
const (
	TokBeginOfText       = "<|begin_of_text|>"
	TokEndOfText         = "<|end_of_text|>"
	TokFrameSep          = "<|frame_sep|>"
	TokActionSep         = "<|action_sep|>"
	TokReturnSep         = "<|return_sep|>"
	TokCallSep           = "<|call_sep|>"
	TokLineSep           = "<|line_sep|>"
	TokExceptionSep      = "<|exception_sep|>"
	TokArgSep            = "<|arg_sep|>"
	TokTraceContextStart = "<|trace_context_start|>"
)

// EntryMarker is the comment on the entry point's def line; a whole
// program's trace (module code as the entry scope) has it alone on the
// context's first line.
const EntryMarker = "# << START_OF_TRACE"

// specialTokens lists every token of the grammar; text that contains one of
// them outside a JSON string cannot be told apart from structure.
var specialTokens = [...]string{
	TokBeginOfText, TokEndOfText, TokFrameSep, TokActionSep, TokReturnSep,
	TokCallSep, TokLineSep, TokExceptionSep, TokArgSep, TokTraceContextStart,
}

// String names the event as CPython's settrace does.
func (e Event) String() string {
	switch e {
	case Call:
		return "call"
	case Line:
		return "line"
	case Return:
		return "return"
	case Exception:
		return "exception"
	}
	return "event(" + strconv.Itoa(int(e)) + ")"
}

// valid reports whether e is one of the four events that have a text form.
func (e Event) valid() bool { return e >= Call && e <= Exception }

// hasLocals reports whether frames of this event carry a locals object
// (call and line) rather than an arg (return and exception).
func (e Event) hasLocals() bool { return e == Call || e == Line }

// token is the separator that opens a frame of this event.
func (e Event) token() string {
	switch e {
	case Call:
		return TokCallSep
	case Line:
		return TokLineSep
	case Return:
		return TokReturnSep
	case Exception:
		return TokExceptionSep
	}
	return ""
}

// eventAt reports which event token, if any, starts s.
func eventAt(s string) (Event, int) {
	if !strings.HasPrefix(s, "<|") {
		return 0, 0
	}
	for _, e := range [...]Event{Line, Call, Return, Exception} {
		if tok := e.token(); strings.HasPrefix(s, tok) {
			return e, len(tok)
		}
	}
	return 0, 0
}

// indexToken returns the offset and text of the first special token in s,
// or -1 and "".
func indexToken(s string) (int, string) {
	for i := 0; ; {
		k := strings.Index(s[i:], "<|")
		if k < 0 {
			return -1, ""
		}
		i += k
		for _, tok := range specialTokens {
			if strings.HasPrefix(s[i:], tok) {
				return i, tok
			}
		}
		i += 2
	}
}

// SpecialToken returns the first of the grammar's tokens that s contains,
// or "": text holding one cannot be a trace's context.
func SpecialToken(s string) string {
	for _, tok := range specialTokens {
		if strings.Contains(s, tok) {
			return tok
		}
	}
	return ""
}
