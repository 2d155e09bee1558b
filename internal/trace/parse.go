package trace

import (
	"strconv"
	"strings"
)

// SyntaxError is a deviation of a text from the grammar, at a byte offset.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return "trace syntax error at offset " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

func errAt(off int, msg string) *SyntaxError { return &SyntaxError{Offset: off, Msg: msg} }

// Parse reads a text that Encode could have written and fails on anything
// else, so that Encode(Parse(text)) == text whenever Parse succeeds. It
// checks syntax only; Validate checks structure (balance, entry point,
// source lines).
//
// Lineno and Depth are not in the text. Parse leaves Lineno 0 and sets
// Depth from the call/return nesting, as scopeWalker defines it. Locals of
// "{}" parse as nil, so that a trace with nil Locals round-trips.
//
// The context runs to the first `<|frame_sep|>`, so a context containing
// that token cannot be written; Parse rejects any special token in the
// context, as Validate does.
func Parse(text string) (Trace, error) {
	var t Trace
	i := 0
	for _, tok := range [...]string{TokBeginOfText, TokTraceContextStart} {
		if !strings.HasPrefix(text[i:], tok) {
			return Trace{}, errAt(i, "expected "+tok)
		}
		i += len(tok)
	}
	n := strings.Index(text[i:], TokFrameSep)
	if n < 0 {
		return Trace{}, errAt(len(text), "context not ended by "+TokFrameSep)
	}
	t.Context = text[i : i+n]
	if k, tok := indexToken(t.Context); k >= 0 {
		return Trace{}, errAt(i+k, tok+" inside the context")
	}
	i += n + len(TokFrameSep)
	for {
		if strings.HasPrefix(text[i:], TokEndOfText) {
			i += len(TokEndOfText)
			if i != len(text) {
				return Trace{}, errAt(i, "trailing bytes after "+TokEndOfText)
			}
			break
		}
		if i == len(text) {
			return Trace{}, errAt(i, "missing "+TokEndOfText)
		}
		f, next, err := parseFrame(text, i, true)
		if err != nil {
			err.Msg = "frame " + strconv.Itoa(len(t.Frames)) + ": " + err.Msg
			return Trace{}, err
		}
		t.Frames = append(t.Frames, f)
		i = next
	}
	setDepths(t.Frames)
	return t, nil
}

// parseFrame reads the frame whose event token starts at s[i] and returns
// it with the offset just past its `<|frame_sep|>`. In lenient mode the
// JSON may be any that json.loads accepts, surrounded by whitespace, the
// locals may be missing altogether, the newline ending the source may be
// missing before a token, and the final `<|frame_sep|>` may be missing at
// the end of the text or before `<|end_of_text|>`; the caller detects those
// repairs by re-encoding.
func parseFrame(s string, i int, strict bool) (Frame, int, *SyntaxError) {
	ev, n := eventAt(s[i:])
	if n == 0 {
		return Frame{}, i, errAt(i, "expected a frame token or "+TokEndOfText)
	}
	f := Frame{Event: ev}
	i += n
	if ev.hasLocals() {
		var err *SyntaxError
		if strict {
			f.Locals, i, err = readLocals(s, i)
		} else {
			f.Locals, i, err = readLocalsLenient(s, i)
		}
		if err != nil {
			return Frame{}, i, err
		}
	}
	if !strings.HasPrefix(s[i:], TokActionSep) {
		return Frame{}, i, errAt(i, "expected "+TokActionSep)
	}
	i += len(TokActionSep)
	end := sourceEnd(s, i)
	f.Source = s[i:end]
	i = end
	switch {
	case i < len(s) && s[i] == '\n':
		i++
	case strict && i < len(s):
		return Frame{}, i, errAt(i, "source line not ended by a newline before the token")
	case strict || i == len(s):
		return Frame{}, i, errAt(i, "source line not ended by a newline")
	}
	if !ev.hasLocals() {
		if !strings.HasPrefix(s[i:], TokArgSep) {
			return Frame{}, i, errAt(i, "expected "+TokArgSep)
		}
		i += len(TokArgSep)
		var err *SyntaxError
		if !strict {
			i = skipSpace(s, i)
		}
		if f.Arg, i, err = readString(s, i, strict); err != nil {
			return Frame{}, i, err
		}
		if !strict {
			i = skipSpace(s, i)
		}
	}
	if strings.HasPrefix(s[i:], TokFrameSep) {
		return f, i + len(TokFrameSep), nil
	}
	if !strict && (i == len(s) || strings.HasPrefix(s[i:], TokEndOfText)) {
		return f, i, nil
	}
	return Frame{}, i, errAt(i, "expected "+TokFrameSep)
}

// sourceEnd returns where the source line starting at s[i] ends: at its
// newline, or at a special token if the newline is missing (a source line
// of a valid trace is a line of a context free of special tokens).
//
// The token is looked for first so that the newline search stays within
// the frame: searching the rest of the text for a newline that is not
// there, once per frame, would make ParseLenient quadratic.
func sourceEnd(s string, i int) int {
	end := len(s)
	if k, _ := indexToken(s[i:]); k >= 0 {
		end = i + k
	}
	if k := strings.IndexByte(s[i:end], '\n'); k >= 0 {
		end = i + k
	}
	return end
}

// readLocals reads the locals object at s[i] exactly as json.dumps writes a
// dict of str.
func readLocals(s string, i int) ([]Local, int, *SyntaxError) {
	if i >= len(s) || s[i] != '{' {
		return nil, i, errAt(i, "expected the locals object")
	}
	i++
	if i < len(s) && s[i] == '}' {
		return nil, i + 1, nil
	}
	var locals []Local
	var names nameIndex
	for {
		keyAt := i
		name, next, err := readString(s, i, true)
		if err != nil {
			return nil, next, err
		}
		if names.find(locals, name) >= 0 {
			return nil, keyAt, errAt(keyAt, "duplicate key "+strconv.Quote(name))
		}
		i = next
		if !strings.HasPrefix(s[i:], ": ") {
			return nil, i, errAt(i, `expected ": " after a key`)
		}
		i += 2
		if i >= len(s) || s[i] != '"' {
			return nil, i, errAt(i, "local value is not a JSON string")
		}
		value, next, err := readString(s, i, true)
		if err != nil {
			return nil, next, err
		}
		i = next
		locals = names.add(locals, Local{Name: name, Value: value})
		switch {
		case strings.HasPrefix(s[i:], ", "):
			i += 2
		case i < len(s) && s[i] == '}':
			return locals, i + 1, nil
		default:
			return nil, i, errAt(i, `expected ", " or "}" after a value`)
		}
	}
}

// readLocalsLenient reads a locals object as json.loads would: any
// whitespace, and a repeated key keeps its first position and its last
// value. Values must still be strings. An empty locals section (the next
// token is `<|action_sep|>`) reads as no locals.
func readLocalsLenient(s string, i int) ([]Local, int, *SyntaxError) {
	i = skipSpace(s, i)
	if strings.HasPrefix(s[i:], TokActionSep) {
		return nil, i, nil
	}
	if i >= len(s) || s[i] != '{' {
		return nil, i, errAt(i, "expected the locals object")
	}
	i = skipSpace(s, i+1)
	var locals []Local
	var names nameIndex
	if i < len(s) && s[i] == '}' {
		return nil, skipSpace(s, i+1), nil
	}
	for {
		name, next, err := readString(s, i, false)
		if err != nil {
			return nil, next, err
		}
		i = skipSpace(s, next)
		if i >= len(s) || s[i] != ':' {
			return nil, i, errAt(i, `expected ":" after a key`)
		}
		i = skipSpace(s, i+1)
		if i >= len(s) || s[i] != '"' {
			return nil, i, errAt(i, "local value is not a JSON string")
		}
		value, next, err := readString(s, i, false)
		if err != nil {
			return nil, next, err
		}
		if k := names.find(locals, name); k >= 0 {
			locals[k].Value = value
		} else {
			locals = names.add(locals, Local{Name: name, Value: value})
		}
		i = skipSpace(s, next)
		switch {
		case i < len(s) && s[i] == ',':
			i = skipSpace(s, i+1)
		case i < len(s) && s[i] == '}':
			return locals, skipSpace(s, i+1), nil
		default:
			return nil, i, errAt(i, `expected "," or "}" after a value`)
		}
	}
}

// skipSpace skips the whitespace json.loads allows between tokens.
func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// nameIndex finds locals by name: a linear scan for the short lists that
// are the norm, a map once a list grows long enough for the scan to cost.
type nameIndex struct{ m map[string]int }

const nameIndexMin = 32

func (x *nameIndex) find(locals []Local, name string) int {
	if x.m == nil && len(locals) >= nameIndexMin {
		x.m = make(map[string]int, 2*len(locals))
		for k, l := range locals {
			if _, dup := x.m[l.Name]; !dup {
				x.m[l.Name] = k
			}
		}
	}
	if x.m != nil {
		if k, ok := x.m[name]; ok {
			return k
		}
		return -1
	}
	for k := range locals {
		if locals[k].Name == name {
			return k
		}
	}
	return -1
}

// add appends l, which find has just not found.
func (x *nameIndex) add(locals []Local, l Local) []Local {
	if x.m != nil {
		x.m[l.Name] = len(locals)
	}
	return append(locals, l)
}
