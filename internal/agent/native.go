package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"cwm/internal/episode"
	"cwm/internal/model"
)

// FunctionProtocol is native OpenAI function calling with CWM's tools plus
// view (ForagerAgent's agents had SWE-agent's view/navigate tool). Tool
// feedback texts are the cwm protocol's; results go back as tool messages
// carrying the call's id.
type FunctionProtocol struct{}

// Name implements Protocol.
func (*FunctionProtocol) Name() string { return "openai" }

// functionSystem replaces CWM's tool specifications, which the function
// schemas carry here, and keeps its rules about sessions and submission.
const functionSystem = `You are working in a linux container. The container session is persistent but will restart when encountering errors or after a {session_timeout} session timeout in each turn. You are also constrained by a {context_size} total context window limit. You can interact with the container through the provided tools for at most {max_turns} turns.

REQUIREMENTS:
* Call exactly one tool in each step before submitting.
* After successful submission, provide a final response without a tool call if the request is resolved, otherwise continue iterating. You cannot provide a final response before calling submit.`

// Prompt implements Protocol: the cwm protocol's user message, with a
// system prompt whose tool descriptions are left to the schemas.
func (*FunctionProtocol) Prompt(pr Prompt) []model.Message {
	msgs := (&CWMProtocol{}).Prompt(pr)
	env := strings.NewReplacer(
		"{session_timeout}", fmt.Sprintf("%d-second", int(pr.Limits.CommandTimeout.Seconds())),
		"{context_size}", fmt.Sprint(pr.Limits.ContextTokens),
		"{max_turns}", fmt.Sprint(pr.Limits.MaxTurns),
	).Replace(functionSystem)
	msgs[0].Content = cwmDescription + "\n\n# Environment\n\n" + env
	msgs[1].Content = strings.Replace(msgs[1].Content, "The [result] argument of <tool: submit>", "The path argument of the submit tool", 1)
	return msgs
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

func object(required []string, props map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

var functionTools = []model.Tool{
	{Name: "bash", Description: "Executes bash command(s) in the current session. The command(s) can be any non-interactive bash command(s), either single or multi-line.",
		Parameters: object([]string{"command"}, map[string]any{"command": str("The bash command(s) to run.")})},
	{Name: "edit", Description: "Replaces search with replace in the file at path, where path must exist and search must uniquely and exactly match one or more consecutive lines from the original file, including indentations and whitespaces.",
		Parameters: object([]string{"path", "search", "replace"}, map[string]any{
			"path": str("The file to edit."), "search": str("The exact lines to replace."), "replace": str("The replacement lines.")})},
	{Name: "create", Description: "Creates a new file at path with content, where path must not exist, but its parent directory must exist.",
		Parameters: object([]string{"path", "content"}, map[string]any{"path": str("The file to create."), "content": str("The file's content.")})},
	{Name: "view", Description: "Shows lines start to end (1-based, inclusive) of the file at path with line numbers. Omit start and end to see the whole file.",
		Parameters: object([]string{"path"}, map[string]any{"path": str("The file to view."),
			"start": map[string]any{"type": "integer", "description": "First line to show."},
			"end":   map[string]any{"type": "integer", "description": "Last line to show."}})},
	{Name: "submit", Description: "Marks the patch file at path as your final submission. The file must contain the end-to-end code changes in git diff format.",
		Parameters: object([]string{"path"}, map[string]any{"path": str("The patch file to submit.")})},
}

// Tools implements Protocol.
func (*FunctionProtocol) Tools() []model.Tool { return functionTools }

// Parse implements Protocol. Unknown tools and bad arguments are not format
// errors here: every call must be answered with a tool message bearing its
// id, so they come back as observations from Run.
func (*FunctionProtocol) Parse(reply model.Message) ([]Call, *FormatError) {
	if len(reply.ToolCalls) == 0 {
		return nil, formatErrorf("No tool calls found")
	}
	calls := make([]Call, len(reply.ToolCalls))
	for i, tc := range reply.ToolCalls {
		calls[i] = Call{ID: tc.ID, Tool: tc.Function.Name, Input: tc.Function.Arguments}
	}
	return calls, nil
}

type functionArgs struct {
	Command string `json:"command"`
	Path    string `json:"path"`
	Search  string `json:"search"`
	Replace string `json:"replace"`
	Content string `json:"content"`
	Start   int    `json:"start"`
	End     int    `json:"end"`
}

// Run implements Protocol.
func (*FunctionProtocol) Run(ctx context.Context, tb *episode.Toolbox, c Call) (episode.Observation, error) {
	var a functionArgs
	known := false
	for _, t := range functionTools {
		known = known || t.Name == c.Tool
	}
	if !known {
		return episode.Observation{Text: fmt.Sprintf("NoSuchToolError: Tool '%s' not found.", c.Tool), Invalid: true}, nil
	}
	if err := json.Unmarshal([]byte(c.Input), &a); err != nil {
		return episode.Observation{Text: fmt.Sprintf("FormatError: The arguments of tool '%s' are not valid JSON: %v", c.Tool, err), Invalid: true}, nil
	}
	switch c.Tool {
	case "bash":
		if strings.TrimSpace(a.Command) == "" {
			return episode.Observation{Text: "FormatError: Tool 'bash' requires non-empty arguments, but received empty or whitespace-only input.", Invalid: true}, nil
		}
		return tb.Bash(ctx, a.Command)
	case "edit":
		return tb.Edit(ctx, a.Path, a.Search, a.Replace)
	case "create":
		return tb.Create(ctx, a.Path, a.Content)
	case "view":
		return tb.View(ctx, a.Path, a.Start, a.End)
	default: // submit
		return tb.Submit(ctx, strings.TrimSpace(a.Path))
	}
}

// Result implements Protocol: the feedback alone, as the tool's output.
func (*FunctionProtocol) Result(c Call, obs episode.Observation, _ Budget) model.Message {
	text := obs.Text
	if c.Tool == "submit" && obs.OK {
		text = strings.Replace(submissionFeedback, "{pred_patch}", obs.Text, 1)
	}
	return model.Message{Role: model.RoleTool, Content: text, ToolCallID: c.ID}
}

// Reject implements Protocol: a reply without a call gets a user message,
// as in the cwm protocol.
func (*FunctionProtocol) Reject(e *FormatError) model.Message {
	return model.Message{Role: model.RoleUser, Content: e.Error()}
}
