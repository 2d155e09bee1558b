package trace

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/golden"
)

// The golden files were written from the spec's text (1.4) and from
// Python's json.dumps (the exception case), not from Encode, so these tests
// check Encode against independent bytes.
func TestGolden(t *testing.T) {
	tests := []struct {
		file string
		full Trace // as a tracer records it
		want Trace // as the text carries it
	}{
		{"paper_example.txt", paperFull(), paperTrace()},
		{"exception_example.txt", excFull(), excTrace()},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			got := Trace{Context: tc.full.Context, Frames: Compress(tc.full.Frames)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Compress(full) mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.full.Frames, Expand(tc.want.Frames)); diff != "" {
				t.Errorf("Expand(compressed) mismatch (-want +got):\n%s", diff)
			}
			if err := Validate(tc.want); err != nil {
				t.Errorf("Validate() = %v, want nil", err)
			}
			text := Encode(tc.want)
			golden.Check(t, filepath.Join("testdata", tc.file), text)
			parsed, err := Parse(text)
			if err != nil {
				t.Fatalf("Parse(golden) error: %v", err)
			}
			if diff := cmp.Diff(tc.want, parsed); diff != "" {
				t.Errorf("Parse(golden) mismatch (-want +got):\n%s", diff)
			}
			prefix := []byte("prompt:")
			if got := string(AppendText(prefix, tc.want)); got != "prompt:"+text {
				t.Errorf("AppendText(prefix) = %q, want the prefix then Encode()", got)
			}
		})
	}
}

// The frame listing of CWM-SPEC 1.4 shows each frame on its own line; in
// the text a frame token follows `<|frame_sep|>` directly, and the context
// is followed directly by `<|frame_sep|>`.
func TestLayoutHasNoNewlinesBetweenTokens(t *testing.T) {
	text := Encode(paperTrace())
	const start = "<|begin_of_text|><|trace_context_start|>def f(a,b):\n"
	if text[:len(start)] != start {
		t.Errorf("Encode() starts %q, want %q", text[:len(start)], start)
	}
	for _, want := range []string{
		"    return f(1,3)\n<|frame_sep|><|call_sep|>{}<|action_sep|>def main(): # << START_OF_TRACE\n<|frame_sep|><|line_sep|>",
		"<|return_sep|><|action_sep|>    return y\n<|arg_sep|>\"6\"<|frame_sep|><|return_sep|>",
		"<|arg_sep|>\"6\"<|frame_sep|><|end_of_text|>",
	} {
		if !contains(text, want) {
			t.Errorf("Encode() lacks %q", want)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
