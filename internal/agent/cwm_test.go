package agent

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/episode"
	"cwm/internal/golden"
	"cwm/internal/model"
)

// CWM-SPEC 2.2: "One tool call per assistant turn, parsed with the regex
// `<tool:\s([a-zA-Z_]+)>\n(.*?)\n</tool>` (DOTALL); more than one call,
// unbalanced tags, no call, or empty arguments is a format error reported
// back to the model."
func TestParseCWM(t *testing.T) {
	cases := []struct {
		reply string
		call  *Call
		err   string
	}{
		{"<tool: bash>\nls -la\n</tool>", &Call{Tool: "bash", Input: "ls -la"}, ""},
		{"Let me look.\n<tool: bash>\ncd /repo\ngrep -rn x .\n</tool>\n", &Call{Tool: "bash", Input: "cd /repo\ngrep -rn x ."}, ""},
		// \s is any whitespace, as in Python: a newline or a no-break space.
		{"<tool:\nbash>\nls\n</tool>", &Call{Tool: "bash", Input: "ls"}, ""},
		{"<tool:\u00a0bash>\nls\n</tool>", &Call{Tool: "bash", Input: "ls"}, ""},
		{"<tool: edit>\na.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n</tool>",
			&Call{Tool: "edit", Input: "a.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE"}, ""},
		{"<tool: bash>\nls\n</tool>\n<tool: submit>\np\n</tool>", nil,
			"FormatError: Expected one tool call, but found 2: bash, submit. Ensure only one <tool:...></tool> block is present in the response."},
		{"<tool: bash>\nls\n</tool> and </tool>", nil,
			"FormatError: Mismatch in tool tag counts: found 1 tool calls via regex, but counted 1 opening tags and 2 closing tags."},
		{"<tool: bash>\nls", nil,
			"FormatError: Mismatch in tool tag counts: found 0 tool calls via regex, but counted 1 opening tags and 0 closing tags."},
		{"<tool: bash>ls</tool>", nil,
			"FormatError: Mismatch in tool tag counts: found 0 tool calls via regex, but counted 1 opening tags and 1 closing tags."},
		{"I think the bug is in calc.py.", nil, "FormatError: No tool calls found"},
		{"<tool: bash>\n  \t\n</tool>", nil,
			"FormatError: Tool 'bash' requires non-empty arguments, but received empty or whitespace-only input."},
		{"<tool: python>\nprint(1)\n</tool>", nil, "NoSuchToolError: Tool 'python' not found."},
		{"<tool: view>\na.py\n</tool>", nil, "NoSuchToolError: Tool 'view' not found."},
	}
	p := &CWMProtocol{ToolRole: model.RoleTool}
	for _, c := range cases {
		calls, ferr := p.Parse(model.Message{Role: model.RoleAssistant, Content: c.reply})
		var gotErr string
		if ferr != nil {
			gotErr = ferr.Error()
		}
		var got *Call
		if len(calls) == 1 {
			got = &calls[0]
		}
		if gotErr != c.err || !cmp.Equal(got, c.call) {
			t.Errorf("Parse(%q) = %+v, %q; want %+v, %q", c.reply, got, gotErr, c.call, c.err)
		}
	}
}

// CWM-SPEC 2.2: "Tool results come back as `<output>\n...\n</output>` plus
// remaining turns/tokens."
func TestCWMGolden(t *testing.T) {
	p := &CWMProtocol{ToolRole: model.RoleTool}
	msgs := p.Prompt(Prompt{Issue: "add(2, 3) returns -1.\n\nIt should return 5.", RepoRoot: "/repo", Limits: DefaultLimits})
	if len(msgs) != 2 || msgs[0].Role != model.RoleSystem || msgs[1].Role != model.RoleUser {
		t.Fatalf("Prompt = %+v, want a system and a user message", msgs)
	}
	golden.Check(t, filepath.Join("testdata", "cwm_system.golden"), msgs[0].Content)
	golden.Check(t, filepath.Join("testdata", "cwm_user.golden"), msgs[1].Content)

	b := Budget{RemainingTurns: 120, UsedTokens: 5000, ContextTokens: 131072}
	bash := p.Result(Call{Tool: "bash"}, episode.Observation{Text: "total 8\n-rw-r--r-- 1 root root 42 calc.py", OK: true}, b)
	submit := p.Result(Call{Tool: "submit"}, episode.Observation{Text: "diff --git a/x b/x", OK: true, Patch: "diff --git a/x b/x\n"}, b)
	failed := p.Result(Call{Tool: "submit"}, episode.Observation{Text: "Failed to submit x. It is an empty file."}, b)
	golden.Check(t, filepath.Join("testdata", "cwm_results.golden"), bash.Content+"\n---\n"+submit.Content+"\n---\n"+failed.Content)
	if bash.Role != model.RoleTool {
		t.Errorf("result role = %q, want tool", bash.Role)
	}
	user := (&CWMProtocol{ToolRole: model.RoleUser}).Result(Call{Tool: "bash"}, episode.Observation{Text: "x"}, b)
	if user.Role != model.RoleUser {
		t.Errorf("result role with ToolRole user = %q", user.Role)
	}
	if got := p.Reject(formatErrorf("No tool calls found")); !cmp.Equal(got, model.Message{Role: model.RoleUser, Content: "FormatError: No tool calls found"}) {
		t.Errorf("Reject = %+v, want a user message", got)
	}
}

// The system prompt states the limits the episode runs under.
func TestCWMSystemPromptLimits(t *testing.T) {
	cases := []struct {
		l    Limits
		want []string
	}{
		{DefaultLimits, []string{"after a 120-second session timeout", "a 131072 total context window", "for at most 128 turns"}},
		{Limits{CommandTimeout: 90500 * time.Millisecond, ContextTokens: 32768, MaxTurns: 50},
			[]string{"after a 90-second session timeout", "a 32768 total context window", "for at most 50 turns"}},
	}
	for _, c := range cases {
		got := (&CWMProtocol{}).SystemPrompt(c.l)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("SystemPrompt(%+v) lacks %q", c.l, w)
			}
		}
	}
}
