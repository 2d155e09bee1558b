package eval

import (
	"strings"
	"testing"

	"cwm/internal/trace"
)

// TestPromptsExact pins the prompts of the paper's worked example: CWM's
// trace prompt (CWM-SPEC 1.1: "<|begin_of_text|><|trace_context_start|>
// $CONTEXT<|frame_sep|>") and CruxEval's direct prompt's ending.
func TestPromptsExact(t *testing.T) {
	p := Problem{ID: "ex", Code: "def f(a,b):\n    y = a\n    for i in range(b):\n        y += y * i\n    return y", Input: "1,3", Output: "6"}
	ctx := "def f(a,b):\n    y = a\n    for i in range(b):\n        y += y * i\n    return y\n\ndef main(): # << START_OF_TRACE\n    return f(1,3)\n"
	full, err := BuildPrompt(TraceFull, Completions, &p)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<|begin_of_text|><|trace_context_start|>" + ctx + "<|frame_sep|>"; full.Text != want || full.Stop[0] != "<|end_of_text|>" {
		t.Errorf("trace-full prompt\n%q\nwant\n%q", full.Text, want)
	}
	final, _ := BuildPrompt(TraceFinal, Completions, &p)
	want := "<|begin_of_text|><|trace_context_start|>" + ctx + "<|frame_sep|>" +
		"<|call_sep|>{}<|action_sep|>def main(): # << START_OF_TRACE\n<|frame_sep|>" +
		"<|line_sep|>{}<|action_sep|>    return f(1,3)\n<|frame_sep|>" +
		"<|return_sep|><|action_sep|>    return f(1,3)\n<|arg_sep|>"
	if final.Text != want || final.Stop[0] != "<|frame_sep|>" {
		t.Errorf("trace-final prompt\n%q\nwant\n%q", final.Text, want)
	}
	// The frames the trace-final prompt holds are the true trace's first
	// frames, as the trace package writes them.
	tr, err := trace.Parse(final.Text + `"6"<|frame_sep|><|end_of_text|>`)
	if err != nil || len(tr.Frames) != 3 {
		t.Fatalf("trace-final prompt does not parse as a trace: %v", err)
	}
	direct, _ := BuildPrompt(Direct, Completions, &p)
	if !strings.HasSuffix(direct.Text, "[PYTHON]\n"+p.Code+"\nassert f(1,3) == ??\n[/PYTHON]\n[ANSWER]\n") ||
		!strings.HasPrefix(direct.Text, "You are given a Python function and an assertion") || direct.Stop[0] != "[/ANSWER]" {
		t.Errorf("direct prompt:\n%s", direct.Text)
	}
	cot, _ := BuildPrompt(DirectCoT, Completions, &p)
	if !strings.HasSuffix(cot.Text, "assert f(1,3) == ??\n[/PYTHON]\n[THOUGHT]\n") {
		t.Errorf("direct-cot prompt:\n%s", cot.Text)
	}
	r, _ := BuildPrompt(Reasoning, Completions, &p)
	if !strings.HasPrefix(r.Text, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful AI assistant. You always reason") ||
		!strings.HasSuffix(r.Text, "[/PYTHON]<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n<think>\n") {
		t.Errorf("reasoning prompt:\n%q", r.Text)
	}
	rc, _ := BuildPrompt(Reasoning, Chat, &p)
	if len(rc.Messages) != 2 || rc.Messages[0].Role != "system" || strings.Contains(rc.Messages[1].Content, "<|") {
		t.Errorf("reasoning on chat: %+v", rc.Messages)
	}
	if _, err := BuildPrompt(TraceFull, Chat, &p); err == nil {
		t.Error("trace-full on the chat endpoint was accepted")
	}
	bad := Problem{ID: "tok", Code: "def f():\n    return '<|frame_sep|>'", Input: ""}
	if _, err := BuildPrompt(TraceFinal, Completions, &bad); err == nil || !strings.Contains(err.Error(), "<|frame_sep|>") {
		t.Errorf("a special token in the code: %v", err)
	}
}

// TestEveryProblemPrompts builds every mode's prompt for the 800 embedded
// problems.
func TestEveryProblemPrompts(t *testing.T) {
	ps := CruxEval()
	if len(ps) != 800 || ps[0].ID != "sample_0" || ps[799].ID != "sample_799" {
		t.Fatalf("%d problems", len(ps))
	}
	for _, m := range Modes {
		for i := range ps {
			if _, err := BuildPrompt(m, Completions, &ps[i]); err != nil {
				t.Fatalf("%s: %v", m, err)
			}
		}
	}
}

// TestExtractAnswer follows CruxEval's postprocess_generation.
func TestExtractAnswer(t *testing.T) {
	cases := []struct {
		mode       Mode
		completion string
		want       string
		format     bool
	}{
		{Direct, "assert f(17) == 17\n", "17", false},
		{Direct, "assert f(17) == 17\n[/ANSWER]\nmore", "17", false},
		{Direct, "17", "17", false},
		{Direct, "assert f(x) == 1 == 1", "1", false}, // between the first and second "=="
		{Direct, "assert f(1) == 'a' # done", "'a' # done", false},
		{DirectCoT, "s is 'hi'.\n[/THOUGHT]\n[ANSWER]\nassert f('hi') == 'bhihia'\n", "'bhihia'", false},
		{DirectCoT, "no tags, but f(1) == 2", "2", false},
		{Reasoning, "x == 3 is tempting\n</think>\n[ANSWER]\nassert f(1) == 4\n[/ANSWER]", "4", false},
		{Reasoning, "[ANSWER]assert f(1) == 4[/ANSWER]", "4", false},
		{TraceFinal, `"[1, 2]"<|frame_sep|>`, "[1, 2]", false},
		{TraceFinal, `"'a\"b'"`, `'a"b'`, false},
		{TraceFinal, `[1, 2]<|frame_sep|>`, "", true},
		{TraceFull, `<|call_sep|>{}<|action_sep|>def main(): # << START_OF_TRACE
<|frame_sep|><|line_sep|>{}<|action_sep|>    return f()
<|frame_sep|><|call_sep|>{}<|action_sep|>def f():
<|frame_sep|><|line_sep|>{}<|action_sep|>    return 1
<|frame_sep|><|return_sep|><|action_sep|>    return 1
<|arg_sep|>"1"<|frame_sep|><|return_sep|><|action_sep|>    return f()
<|arg_sep|>"2"<|frame_sep|>`, "2", false},
		{TraceFull, `<|call_sep|>{}<|action_sep|>def main(): # << START_OF_TRACE
<|frame_sep|><|line_sep|>{}<|action_sep|>    return f()
<|frame_sep|>`, "", true},
		{TraceFull, `<|call_sep|>{not json}<|action_sep|>def main(): # << START_OF_TRACE
<|frame_sep|><|return_sep|><|action_sep|>    return f()
<|arg_sep|>"2"<|frame_sep|>`, "", true},
	}
	for _, c := range cases {
		ex := ExtractAnswer(c.mode, c.completion)
		if ex.Answer != c.want || (ex.FormatError != "") != c.format {
			t.Errorf("%s %q: answer %q, format error %q; want %q (format error %v)", c.mode, c.completion, ex.Answer, ex.FormatError, c.want, c.format)
		}
	}
}

// TestThinkTokens: another model's thinking tokens open the reasoning
// prompt and close the thinking the answer is read after.
func TestThinkTokens(t *testing.T) {
	p := Problem{ID: "x", Code: "def f(n):\n    return n", Input: "1", Output: "1"}
	th := Think{Open: "<|reasoning_thinking_start|>", Close: "<|reasoning_thinking_end|>"}
	pr, err := BuildPromptThink(Reasoning, Completions, &p, th)
	if err != nil || !strings.HasSuffix(pr.Text, "<|start_header_id|>assistant<|end_header_id|>\n\n<|reasoning_thinking_start|>") {
		t.Fatalf("prompt %q: %v", pr.Text, err)
	}
	c := "[ANSWER]assert f(1) == 2[/ANSWER] no, wait<|reasoning_thinking_end|>[ANSWER]assert f(1) == 1[/ANSWER]"
	if got := ExtractAnswerThink(Reasoning, c, th).Answer; got != "1" {
		t.Errorf("answer %q, want 1", got)
	}
	if got := ExtractHalt("[ANSWER]diverges[/ANSWER]</think>[ANSWER]terminates[/ANSWER]", Think{}); got != Terminates {
		t.Errorf("halt answer %q", got)
	}
}
