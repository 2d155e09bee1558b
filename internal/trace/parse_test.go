package trace

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mark is where a test text expects its error; it is cut out before parsing.
const mark = "‸"

const (
	head  = "<|begin_of_text|><|trace_context_start|>def main(): # << START_OF_TRACE\n    return 1\n<|frame_sep|>"
	entry = "<|call_sep|>{}<|action_sep|>def main(): # << START_OF_TRACE\n<|frame_sep|>"
	tail  = "<|return_sep|><|action_sep|>    return 1\n<|arg_sep|>\"1\"<|frame_sep|><|end_of_text|>"
)

func TestParseStrictErrors(t *testing.T) {
	tests := []struct {
		name string
		text string // with mark at the expected offset
		msg  string // part of the message
	}{
		{"empty", mark, "expected <|begin_of_text|>"},
		{"no begin", mark + "<|trace_context_start|>x<|frame_sep|><|end_of_text|>", "expected <|begin_of_text|>"},
		{"no context start", "<|begin_of_text|>" + mark + "x<|frame_sep|><|end_of_text|>", "expected <|trace_context_start|>"},
		{"context not closed", "<|begin_of_text|><|trace_context_start|>def main():\n" + mark, "context not ended"},
		{"token in context", "<|begin_of_text|><|trace_context_start|>a" + mark + "<|call_sep|>b<|frame_sep|><|end_of_text|>", "<|call_sep|> inside the context"},
		{"missing end", head + entry + mark, "missing <|end_of_text|>"},
		{"trailing bytes", head + entry + tail + mark + "\n", "trailing bytes"},
		{"newline between frames", head + mark + "\n" + entry + tail, "expected a frame token"},
		{"unknown token", head + mark + "<|step_sep|>{}<|action_sep|>x\n<|frame_sep|>" + tail, "expected a frame token"},
		{"missing action sep", head + "<|call_sep|>{}" + mark + "def main():\n<|frame_sep|>" + tail, "expected <|action_sep|>"},
		{"no locals", head + "<|line_sep|>" + mark + "<|action_sep|>    return 1\n<|frame_sep|>" + tail, "expected the locals object"},
		{"key without space", head + entry + `<|line_sep|>{"a"` + mark + `:"1"}<|action_sep|>    return 1` + "\n<|frame_sep|>" + tail, `expected ": "`},
		{"comma without space", head + entry + `<|line_sep|>{"a": "1"` + mark + `,"b": "2"}<|action_sep|>    return 1` + "\n<|frame_sep|>" + tail, `expected ", " or "}"`},
		{"space before brace", head + entry + `<|line_sep|>{"a": "1"` + mark + ` }<|action_sep|>    return 1` + "\n<|frame_sep|>" + tail, `expected ", " or "}"`},
		{"number value", head + entry + `<|line_sep|>{"a": ` + mark + `1}<|action_sep|>    return 1` + "\n<|frame_sep|>" + tail, "not a JSON string"},
		{"locals an array", head + "<|line_sep|>" + mark + `["a"]<|action_sep|>    return 1` + "\n<|frame_sep|>" + tail, "expected the locals object"},
		{"duplicate key", head + entry + `<|line_sep|>{"a": "1", ` + mark + `"a": "2"}<|action_sep|>    return 1` + "\n<|frame_sep|>" + tail, "duplicate key"},
		{"upper-case hex", head + entry + `<|line_sep|>{"a": "\u00` + mark + `E9"}<|action_sep|>    return 1` + "\n<|frame_sep|>" + tail, "upper-case hex"},
		{"raw non-ASCII", head + entry + `<|line_sep|>{"a": "` + mark + `é"}<|action_sep|>    return 1` + "\n<|frame_sep|>" + tail, "raw non-ASCII"},
		{"escaped slash", head + entry + `<|line_sep|>{"a": "` + mark + `\/"}<|action_sep|>    return 1` + "\n<|frame_sep|>" + tail, `escaped "/"`},
		{"source without newline", head + "<|call_sep|>{}<|action_sep|>def main():" + mark + "<|frame_sep|>" + tail, "not ended by a newline"},
		{"return with locals", head + entry + "<|return_sep|>" + mark + "{}<|action_sep|>    return 1\n<|arg_sep|>\"1\"<|frame_sep|><|end_of_text|>", "expected <|action_sep|>"},
		{"return without arg", head + entry + "<|return_sep|><|action_sep|>    return 1\n" + mark + "<|frame_sep|><|end_of_text|>", "expected <|arg_sep|>"},
		{"line with arg", head + entry + "<|line_sep|>{}<|action_sep|>    return 1\n" + mark + "<|arg_sep|>\"1\"<|frame_sep|>" + tail, "expected <|frame_sep|>"},
		{"arg not a string", head + entry + "<|return_sep|><|action_sep|>    return 1\n<|arg_sep|>" + mark + "1<|frame_sep|><|end_of_text|>", "expected a JSON string"},
		{"space before arg", head + entry + "<|return_sep|><|action_sep|>    return 1\n<|arg_sep|>" + mark + " \"1\"<|frame_sep|><|end_of_text|>", "expected a JSON string"},
		{"missing frame sep", head + entry + "<|return_sep|><|action_sep|>    return 1\n<|arg_sep|>\"1\"" + mark + "<|end_of_text|>", "expected <|frame_sep|>"},
		{"truncated", head + entry + `<|line_sep|>{"a": "1` + mark, "unterminated JSON string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := strings.Index(tc.text, mark)
			text := strings.Replace(tc.text, mark, "", 1)
			got, err := Parse(text)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) = %+v, %v, want a *SyntaxError", text, got, err)
			}
			if se.Offset != want || !strings.Contains(se.Msg, tc.msg) {
				t.Errorf("Parse(%q) error = %v, want offset %d and %q", text, err, want, tc.msg)
			}
		})
	}
}

func TestParseSetsDepthAndNilLocals(t *testing.T) {
	got, err := Parse(head + entry + "<|line_sep|>{}<|action_sep|>    return 1\n<|frame_sep|>" + tail)
	if err != nil {
		t.Fatal(err)
	}
	want := Trace{Context: "def main(): # << START_OF_TRACE\n    return 1\n", Frames: []Frame{
		call(0, mainDef),
		line(0, "    return 1"),
		ret(0, "    return 1", "1"),
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse() mismatch (-want +got):\n%s", diff)
	}
}

// A source line or value may hold text that looks like a token: values are
// JSON strings read to their closing quote, and a source line runs to its
// newline, so Encode's output parses back.
func TestParseTokenLookalikesInValues(t *testing.T) {
	tr := Trace{Context: "def main(): # << START_OF_TRACE\n    return '<|x|>'", Frames: []Frame{
		call(0, mainDef, "s", "'<|frame_sep|>'"),
		line(0, "    return '<|x|>'", "s", "..", "t", "\"<|arg_sep|>\"\n"),
		ret(0, "    return '<|x|>'", "'<|end_of_text|>'"),
	}}
	got, err := Parse(Encode(tr))
	if err != nil {
		t.Fatalf("Parse(Encode()) error: %v", err)
	}
	if diff := cmp.Diff(tr, got); diff != "" {
		t.Errorf("Parse(Encode()) mismatch (-want +got):\n%s", diff)
	}
}

func TestEncodeDropsWhatTheEventCannotCarry(t *testing.T) {
	tr := Trace{Context: "c", Frames: []Frame{
		{Event: Line, Locals: L("a", "1"), Source: "x", Arg: "dropped"},
		{Event: 0, Source: "skipped"},
		{Event: Return, Locals: L("b", "2"), Source: "y", Arg: "1"},
	}}
	want := "<|begin_of_text|><|trace_context_start|>c<|frame_sep|>" +
		`<|line_sep|>{"a": "1"}<|action_sep|>x` + "\n<|frame_sep|>" +
		"<|return_sep|><|action_sep|>y\n<|arg_sep|>\"1\"<|frame_sep|><|end_of_text|>"
	if got := Encode(tr); got != want {
		t.Errorf("Encode() = %q, want %q", got, want)
	}
}
