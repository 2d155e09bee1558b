package agent

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"cwm/internal/episode"
	"cwm/internal/lazyre"
	"cwm/internal/model"
)

// CWMProtocol is CWM's text tool protocol, as Meta's released SWE-RL
// environment (cwm/rl/envs/envs/swerl_tool.py, cwm/rl/swerl) speaks it:
// one `<tool: NAME>\nINPUT\n</tool>` block per reply, results framed in
// <output> with a <budget> notice. Every string the model sees is CWM's,
// byte for byte, so that trajectories match what CWM was trained on.
type CWMProtocol struct {
	// ToolRole is the role of tool-result messages: "tool" or "user".
	ToolRole string
	// SubmissionFeedback, when set, replaces CWM's feedback on a
	// submitted patch ({pred_patch} is what was submitted): another
	// environment's, such as test generation's.
	SubmissionFeedback string
}

// Name implements Protocol.
func (*CWMProtocol) Name() string { return "cwm" }

// cwmDescription and cwmEnvironment make CWM's system prompt
// (prompts.get_cwm_sys_prompt without thinking, SYSTEM_UBUNTU).
const cwmDescription = "You are a helpful AI assistant."

const cwmEnvironment = `You are working in a linux container. The container session is persistent but will restart when encountering errors or after a {session_timeout} session timeout in each turn. You are also constrained by a {context_size} total context window limit. You can interact with the container through the following tool interface for at most {max_turns} turns. Here are the specifications:

<tool: bash>
[command(s)]
</tool>
Executes bash command(s) [command(s)] in the current session. [command(s)] can be any non-interactive bash command(s), either single or multi-line.

<tool: edit>
[path]
<<<<<<< SEARCH
[search_lines]
=======
[replacement_lines]
>>>>>>> REPLACE
</tool>
Replaces [search_lines] from [path] with [replacement_lines], where [path] must exist and [search_lines] must uniquely and exactly match one or more consecutive lines from the original file, including indentations and whitespaces.

<tool: create>
[path]
[content]
</tool>
Creates a new file at [path] with [content], where [path] must not exist, but its parent directory must exist.

<tool: submit>
[result]
</tool>
Marks [result] as your final submission. The meaning and format of [result] depends on the specific user request.

REQUIREMENTS:
* You cannot invoke more than one tool in each step.
* You must invoke exactly one tool in each step before any <tool: submit> call.
* After successful submission, provide a final response if the request is resolved, otherwise continue iterating. You cannot provide a final response before invoking <tool: submit>.`

// cwmIssue is CWM's first user message (USER_ISSUE_SOLVING). The summary
// template paragraph is cwm's own wording of the same four sections.
const cwmIssue = "Solve the following issue by implementing the necessary code changes and submitting a patch file:\n\n" +
	"<issue_description>\n{issue}\n</issue_description>\n\n" +
	"The [result] argument of <tool: submit> should be the path to a patch file that resolves the issue. This file must be accessible from the current working directory and should contain the end-to-end code changes in git diff format. You can refine and submit your patch multiple times as needed to ensure correctness.\n\n" +
	"After at least one submission, and once you are confident in it, give a final response that summarizes your work. Use the markdown template below as a guide and adapt its sections to the issue and your solution:\n\n" +
	"```markdown\n" +
	"## Issue Summary\n\n" +
	"What the issue is (a bug, a feature or an enhancement), which component it affects, and what the expected behavior is.\n\n" +
	"## Investigation and Reproduction\n\n" +
	"How you came to understand and reproduce the issue: the commands you ran, the tests you tried, the errors you saw, how you debugged it and what the root cause is. For a feature, how you analyzed the requirement and explored the codebase.\n\n" +
	"## Solution and Code Changes\n\n" +
	"Your approach and why you chose it, then the concrete changes file by file or component by component (new functions, classes, design decisions), and how the changes fit together when several files are involved.\n\n" +
	"## Testing and Verification\n\n" +
	"How you made sure the patch resolves the issue completely: the tests you added or changed to check it, how you ran the existing tests to catch regressions, and how thorough the testing was (which edge cases and scenarios you covered).\n" +
	"```\n\n" +
	"Your primary objective is to ensure patch correctness above all else - thoroughly explore the codebase, think hard, and leverage significant execution to verify correctness by writing comprehensive tests to validate your solution and running existing tests to prevent regressions. Only submit when you are genuinely confident in your patch's correctness.\n\n" +
	"I've uploaded the corresponding code repository at {repo_root} and installed all the necessary dependencies. Now, the bash session has started, with the current working directory set to the repo root."

// budgetTemplate is CWM's BUDGET_NOTICE_TEMPLATE. Its unfilled form is also
// what CWM counts when it estimates the size of a result.
const budgetTemplate = "<budget>\n* Remaining turns: {remaining_turns}\n* Remaining tokens: {remaining_tokens}\n</budget>"

// submissionFeedback is CWM's SUBMISSION_FEEDBACK_PROMPT.
const submissionFeedback = "The following patch content is marked as your final submission:\n\n<submission>\n{pred_patch}\n</submission>\n\nReview the patch content and ensure it correctly resolves the issue. If necessary, you can continue refining the patch and submit an updated version."

// SystemPrompt is CWM's system prompt for limits l.
func (*CWMProtocol) SystemPrompt(l Limits) string {
	env := strings.NewReplacer(
		"{session_timeout}", strconv.Itoa(int(l.CommandTimeout.Seconds()))+"-second",
		"{context_size}", strconv.Itoa(l.ContextTokens),
		"{max_turns}", strconv.Itoa(l.MaxTurns),
	).Replace(cwmEnvironment)
	return cwmDescription + "\n\n" + "# Environment\n\n" + env
}

// Prompt implements Protocol.
func (p *CWMProtocol) Prompt(pr Prompt) []model.Message {
	// One pass, as Python's str.format: an issue that happens to contain
	// "{repo_root}" is left alone.
	tmpl := cwmIssue
	if pr.Instruction != "" {
		tmpl = pr.Instruction
	}
	user := strings.NewReplacer("{issue}", pr.Issue, "{repo_root}", pr.RepoRoot).Replace(tmpl)
	return []model.Message{
		{Role: model.RoleSystem, Content: p.SystemPrompt(pr.Limits)},
		{Role: model.RoleUser, Content: user},
	}
}

// Tools implements Protocol: the tools are described in the system prompt.
func (*CWMProtocol) Tools() []model.Tool { return nil }

// toolCallRe is CWM's TOOL_CALL_REGEX with DOTALL. Python's \s also matches
// \v, the ASCII separators and Unicode spaces, which RE2's \s does not; the
// class spells them out so both accept the same replies.
var toolCallRe = lazyre.New(`(?s)<tool:[\s\v\x1c-\x1f\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]([a-zA-Z_]+)>\n(.*?)\n</tool>`)

// cwmTools are the tools CWM's environment has with plugins on.
var cwmTools = map[string]bool{"bash": true, "edit": true, "create": true, "submit": true}

// Parse implements Protocol with CWM's parse_tool_calls and the unknown
// tool check of its backend, in that order, with its messages.
func (*CWMProtocol) Parse(reply model.Message) ([]Call, *FormatError) {
	text := reply.Content
	ms := toolCallRe().FindAllStringSubmatch(text, -1)
	if len(ms) > 1 {
		names := make([]string, len(ms))
		for i, m := range ms {
			names[i] = m[1]
		}
		return nil, formatErrorf("Expected one tool call, but found %d: %s. Ensure only one <tool:...></tool> block is present in the response.",
			len(ms), strings.Join(names, ", "))
	}
	opening, closing := strings.Count(text, "<tool:"), strings.Count(text, "</tool>")
	if len(ms) != opening || len(ms) != closing {
		return nil, formatErrorf("Mismatch in tool tag counts: found %d tool calls via regex, but counted %d opening tags and %d closing tags.",
			len(ms), opening, closing)
	}
	if len(ms) == 0 {
		return nil, formatErrorf("No tool calls found")
	}
	name, input := ms[0][1], ms[0][2]
	if strings.TrimSpace(input) == "" {
		return nil, formatErrorf("Tool '%s' requires non-empty arguments, but received empty or whitespace-only input.", name)
	}
	if !cwmTools[name] {
		return nil, &FormatError{Kind: "NoSuchToolError", Msg: fmt.Sprintf("Tool '%s' not found.", name)}
	}
	return []Call{{Tool: name, Input: input}}, nil
}

// Run implements Protocol.
func (*CWMProtocol) Run(ctx context.Context, tb *episode.Toolbox, c Call) (episode.Observation, error) {
	switch c.Tool {
	case "bash":
		return tb.Bash(ctx, c.Input)
	case "edit":
		return tb.EditText(ctx, c.Input)
	case "create":
		return tb.CreateText(ctx, c.Input)
	case "submit":
		return tb.Submit(ctx, strings.TrimSpace(c.Input))
	}
	return episode.Observation{}, fmt.Errorf("cwm protocol: no tool %q", c.Tool)
}

// Result implements Protocol: CWM's <output> and <budget> framing. The
// remaining tokens subtract an estimate of the result itself, as CWM does
// (it tokenizes the result with the unfilled budget template).
func (p *CWMProtocol) Result(c Call, obs episode.Observation, b Budget) model.Message {
	feedback := obs.Text
	if c.Tool == "submit" && obs.OK {
		tmpl := submissionFeedback
		if p.SubmissionFeedback != "" {
			tmpl = p.SubmissionFeedback
		}
		feedback = strings.Replace(tmpl, "{pred_patch}", obs.Text, 1)
	}
	out := "<output>\n" + feedback + "\n</output>"
	est := model.EstimateTokens(len(out) + 2 + len(budgetTemplate))
	remaining := int64(b.ContextTokens) - b.UsedTokens - est
	budget := strings.NewReplacer(
		"{remaining_turns}", strconv.Itoa(b.RemainingTurns),
		"{remaining_tokens}", strconv.FormatInt(remaining, 10),
	).Replace(budgetTemplate)
	return model.Message{Role: p.ToolRole, Content: out + "\n\n" + budget}
}

// Reject implements Protocol: CWM returns format errors as a user message,
// since one call per step is a rule of the user, not of the tools.
func (*CWMProtocol) Reject(e *FormatError) model.Message {
	return model.Message{Role: model.RoleUser, Content: e.Error()}
}
