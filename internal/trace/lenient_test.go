package trace

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// paperFrames is the text of the paper example's frames alone, as a model
// continuing the prompt emits them.
func paperFrames() (prompt, frames string) {
	text := Encode(paperTrace())
	cut := strings.Index(text, TokFrameSep) + len(TokFrameSep)
	return text[:cut], text[cut:]
}

func TestParseLenient(t *testing.T) {
	prompt, frames := paperFrames()
	all := paperTrace().Frames
	without := func(drop ...int) []Frame {
		var out []Frame
		for i, f := range all {
			if !containsInt(drop, i) {
				out = append(out, f)
			}
		}
		return out
	}
	// cut returns frames with frame i's text replaced by repl.
	cut := func(i int, repl string) string {
		parts := strings.SplitAfter(frames, TokFrameSep)
		parts[i] = repl
		return strings.Join(parts, "")
	}
	garbage := "I think the next line is"
	numberValue := `<|line_sep|>{"a": 1}<|action_sep|>        y += y * i` + "\n" + TokFrameSep
	bogus := `<|line_sep|><|bogus|><|action_sep|>    y = a` + "\n" + TokFrameSep
	truncated := frames[:strings.Index(frames, `"i": "1"`)]
	partial := len(truncated) - len(strings.Join(strings.SplitAfter(frames, TokFrameSep)[:7], ""))

	tests := []struct {
		name    string
		text    string
		context string
		frames  []Frame
		stats   LenientStats
	}{
		{
			name: "valid", text: prompt + frames, context: paperContext, frames: all,
			stats: LenientStats{Frames: 14},
		},
		{
			name: "frames only", text: frames, frames: all,
			stats: LenientStats{Frames: 14, MissingPrefix: true},
		},
		{
			name: "frames only after the sentinel", text: TokFrameSep + frames, frames: all,
			stats: LenientStats{Frames: 14, MissingPrefix: true},
		},
		{
			name: "stop token stripped", text: strings.TrimSuffix(frames, TokEndOfText), frames: all,
			stats: LenientStats{Frames: 14, MissingPrefix: true, MissingEnd: true},
		},
		{
			name: "text after the end", text: frames + "\n\nmore", frames: all,
			stats: LenientStats{Frames: 14, MissingPrefix: true, TrailingBytes: 6},
		},
		{
			name: "garbage between frames", text: cut(4, garbage+strings.SplitAfter(frames, TokFrameSep)[4]), frames: all,
			stats: LenientStats{Frames: 14, MissingPrefix: true, FormatErrors: 1, SkippedBytes: len(garbage),
				Errors: []SyntaxError{{Offset: len(strings.Join(strings.SplitAfter(frames, TokFrameSep)[:4], "")), Msg: "stray bytes between frames"}}},
		},
		{
			name: "number value", text: cut(5, numberValue), frames: without(5),
			stats: LenientStats{Frames: 13, MissingPrefix: true, FormatErrors: 1, SkippedBytes: len(numberValue)},
		},
		{
			name: "unknown token in a frame", text: cut(3, bogus), frames: without(3),
			stats: LenientStats{Frames: 13, MissingPrefix: true, FormatErrors: 1, SkippedBytes: len(bogus)},
		},
		{
			name: "truncated", text: truncated, frames: all[:7],
			stats: LenientStats{Frames: 7, MissingPrefix: true, MissingEnd: true, FormatErrors: 1, SkippedBytes: partial},
		},
		{
			name: "loose JSON", text: cut(2, `<|call_sep|> {"a":"1",  "b" : "\u0033"}<|action_sep|>def f(a,b):`+"\n"+TokFrameSep), frames: all,
			stats: LenientStats{Frames: 14, MissingPrefix: true, Repairs: 1},
		},
		{
			name: "missing newline", text: strings.Replace(frames, "    y = a\n", "    y = a", 1), frames: all,
			stats: LenientStats{Frames: 14, MissingPrefix: true, Repairs: 1},
		},
		{
			name: "missing final frame sep", text: strings.Replace(frames, `"6"<|frame_sep|><|end_of_text|>`, `"6"<|end_of_text|>`, 1), frames: all,
			stats: LenientStats{Frames: 14, MissingPrefix: true, Repairs: 1},
		},
		{
			name: "repeated key keeps the last value", text: cut(2, `<|call_sep|>{"a": "0", "b": "3", "a": "1"}<|action_sep|>def f(a,b):`+"\n"+TokFrameSep), frames: all,
			stats: LenientStats{Frames: 14, MissingPrefix: true, Repairs: 1},
		},
		{
			name: "empty", text: "",
			stats: LenientStats{MissingPrefix: true, MissingEnd: true},
		},
		{
			name: "context never closed", text: "<|begin_of_text|><|trace_context_start|>def main():", context: "def main():",
			stats: LenientStats{FormatErrors: 1, MissingEnd: true},
		},
	}
	ignoreErrors := cmpopts.IgnoreFields(LenientStats{}, "Errors")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, st := ParseLenient(tc.text)
			want := Trace{Context: tc.context, Frames: tc.frames}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseLenient() trace mismatch (-want +got):\n%s", diff)
			}
			opts := cmp.Options{}
			if tc.stats.Errors == nil {
				opts = append(opts, ignoreErrors)
			}
			if diff := cmp.Diff(tc.stats, st, opts); diff != "" {
				t.Errorf("ParseLenient() stats mismatch (-want +got):\n%s", diff)
			}
			if len(st.Errors) != min(st.FormatErrors, maxLenientErrors) {
				t.Errorf("ParseLenient() kept %d errors for %d format errors", len(st.Errors), st.FormatErrors)
			}
			if st.ValidFormat() != (st.FormatErrors == 0) {
				t.Errorf("ValidFormat() = %v with %d format errors", st.ValidFormat(), st.FormatErrors)
			}
		})
	}
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Recovery must stay linear in the text: a model can emit thousands of
// frames with a defect repeated in each.
func TestParseLenientIsLinear(t *testing.T) {
	for _, frame := range []string{
		"<|line_sep|>{}<|action_sep|>x<|frame_sep|>", // no newline anywhere
		`<|line_sep|>{"a": "1"<|frame_sep|>`,         // no action
		"<|return_sep|><|action_sep|>x<|arg_sep|>1",  // no newline, arg not JSON
		"<|line_sep|>{\"",                            // unterminated key
	} {
		text := strings.Repeat(frame, 100_000)
		start := time.Now()
		_, st := ParseLenient(text)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("ParseLenient(%d × %q) took %v (%d frames, %d errors)", 100_000, frame, d, st.Frames, st.FormatErrors)
		}
	}
}
