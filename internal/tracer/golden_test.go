package tracer

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/golden"
	"cwm/internal/trace"
)

// paperCode is the function of CWM-SPEC 1.4, "The worked example (the
// paper's own; cwm must reproduce it byte for byte)":
//
//	def f(a,b):
//	    y = a
//	    for i in range(b):
//	        y += y * i
//	    return y
//
//	def main(): # << START_OF_TRACE
//	    return f(1,3)
const paperCode = "def f(a,b):\n    y = a\n    for i in range(b):\n        y += y * i\n    return y\n"

// paperFrames are the spec's frames, "one per line here (each ends with
// `<|frame_sep|>` in the text)", transcribed verbatim from CWM-SPEC 1.4.
var paperFrames = []string{
	`<|call_sep|>{}<|action_sep|>def main(): # << START_OF_TRACE`,
	`<|line_sep|>{}<|action_sep|>    return f(1,3)`,
	`<|call_sep|>{"a": "1", "b": "3"}<|action_sep|>def f(a,b):`,
	`<|line_sep|>{"a": "..", "b": ".."}<|action_sep|>    y = a`,
	`<|line_sep|>{"a": "..", "b": "..", "y": "1"}<|action_sep|>    for i in range(b):`,
	`<|line_sep|>{"a": "..", "b": "..", "y": "..", "i": "0"}<|action_sep|>        y += y * i`,
	`<|line_sep|>{"a": "..", "b": "..", "y": "..", "i": ".."}<|action_sep|>    for i in range(b):`,
	`<|line_sep|>{"a": "..", "b": "..", "y": "..", "i": "1"}<|action_sep|>        y += y * i`,
	`<|line_sep|>{"a": "..", "b": "..", "y": "2", "i": ".."}<|action_sep|>    for i in range(b):`,
	`<|line_sep|>{"a": "..", "b": "..", "y": "..", "i": "2"}<|action_sep|>        y += y * i`,
	`<|line_sep|>{"a": "..", "b": "..", "y": "6", "i": ".."}<|action_sep|>    for i in range(b):`,
	`<|line_sep|>{"a": "..", "b": "..", "y": "..", "i": ".."}<|action_sep|>    return y`,
	// "In the text the return frames are
	// `<|return_sep|><|action_sep|>    return y\n<|arg_sep|>"6"<|frame_sep|>`."
	"<|return_sep|><|action_sep|>    return y\n<|arg_sep|>\"6\"",
	"<|return_sep|><|action_sep|>    return f(1,3)\n<|arg_sep|>\"6\"",
}

// paperText assembles the spec's frames into the exact text: "$SOURCE is
// the source line as written (indentation kept) followed by `\n`", each
// frame ends with <|frame_sep|>, and the trace ends with <|end_of_text|>.
func paperText() string {
	s := "<|begin_of_text|><|trace_context_start|>" + Context(paperCode, "f(1,3)") + "<|frame_sep|>"
	for _, f := range paperFrames {
		if f[len(f)-1] != '"' { // call and line frames: the source line ends the frame
			f += "\n"
		}
		s += f + "<|frame_sep|>"
	}
	return s + "<|end_of_text|>"
}

func TestPaperExample(t *testing.T) {
	p := testPool(t)
	res := p.Trace(context.Background(), Func{ID: "paper", Code: paperCode, Call: "f(1,3)"})
	if res.Status != OK {
		t.Fatalf("Trace(paper) status %s: %s", res.Status, res.Error)
	}
	if want := "def f(a,b):\n    y = a\n    for i in range(b):\n        y += y * i\n    return y\n\ndef main(): # << START_OF_TRACE\n    return f(1,3)\n"; res.Context != want {
		t.Errorf("context:\n%s\nwant (CWM-SPEC 1.4):\n%s", res.Context, want)
	}
	if diff := cmp.Diff(paperText(), res.Text); diff != "" {
		t.Errorf("Trace(paper) text differs from CWM-SPEC 1.4 (-spec +got):\n%s", diff)
	}
	if res.Output != "6" {
		t.Errorf("Trace(paper) output = %q, want %q", res.Output, "6")
	}
	golden.Check(t, filepath.Join("testdata", "golden", "paper.txt"), res.Text)
	// The text is what the trace package's strict parser accepts and what
	// its own compression would write.
	parsed, err := trace.Parse(res.Text)
	if err != nil {
		t.Fatalf("trace.Parse: %v", err)
	}
	if diff := cmp.Diff(trace.Compress(trace.Expand(parsed.Frames)), parsed.Frames); diff != "" {
		t.Errorf("tracer's \"..\" differ from trace.Compress (-compress +tracer):\n%s", diff)
	}
}

// TestExceptionForm checks the exception case in CWM's observed form
// (CWM-SPEC 1.2): "exception frames carry no locals; observed CWM outputs
// use the repr of the settrace argument tuple, e.g.
// "(<class 'ValueError'>, ValueError('substring not found'), <traceback object>)",
// followed by a return frame in the same scope with value "None" (CPython
// reports the unwinding return with arg None), then an exception frame in
// the caller."
func TestExceptionForm(t *testing.T) {
	p := testPool(t)
	code := "def f(text, sub):\n    i = text.index(sub)\n    return i\n"
	res := p.Trace(context.Background(), Func{ID: "exc", Code: code, Call: "f('abc', 'z')"})
	if res.Status != Exception {
		t.Fatalf("Trace(exc) status %s (%s), want exception", res.Status, res.Error)
	}
	const exc = "(<class 'ValueError'>, ValueError('substring not found'), <traceback object>)"
	var got []string
	for _, f := range res.Frames {
		got = append(got, string(trace.AppendFrame(nil, f.Frame)))
	}
	want := []string{
		"<|call_sep|>{}<|action_sep|>def main(): # << START_OF_TRACE\n<|frame_sep|>",
		"<|line_sep|>{}<|action_sep|>    return f('abc', 'z')\n<|frame_sep|>",
		`<|call_sep|>{"text": "'abc'", "sub": "'z'"}<|action_sep|>def f(text, sub):` + "\n<|frame_sep|>",
		`<|line_sep|>{"text": "..", "sub": ".."}<|action_sep|>    i = text.index(sub)` + "\n<|frame_sep|>",
		"<|exception_sep|><|action_sep|>    i = text.index(sub)\n<|arg_sep|>\"" + exc + "\"<|frame_sep|>",
		"<|return_sep|><|action_sep|>    i = text.index(sub)\n<|arg_sep|>\"None\"<|frame_sep|>",
		"<|exception_sep|><|action_sep|>    return f('abc', 'z')\n<|arg_sep|>\"" + exc + "\"<|frame_sep|>",
		"<|return_sep|><|action_sep|>    return f('abc', 'z')\n<|arg_sep|>\"None\"<|frame_sep|>",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exception frames (-want +got):\n%s", diff)
	}
	if res.Output != "ValueError('substring not found')" {
		t.Errorf("output = %q, want the exception's repr", res.Output)
	}
	golden.Check(t, filepath.Join("testdata", "golden", "exception.txt"), res.Text)
}
