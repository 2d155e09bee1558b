package agent

import (
	"context"
	"fmt"

	"cwm/internal/episode"
	"cwm/internal/errkind"
	"cwm/internal/model"
)

// Protocol is how tool calls and their results are written in the
// conversation. The episode loop is the same for every protocol; only the
// text differs. Two exist: CWM's text protocol and native function calling.
type Protocol interface {
	// Name is the --protocol value: "cwm" or "openai".
	Name() string
	// Prompt returns the opening messages of an episode (system and user).
	Prompt(p Prompt) []model.Message
	// Tools are offered to the model for native function calling; nil
	// for text protocols.
	Tools() []model.Tool
	// Parse extracts the calls of an assistant reply. A reply with no call
	// that can run is a *FormatError, which the episode feeds back.
	Parse(reply model.Message) ([]Call, *FormatError)
	// Run executes one call. The error is for failures of the sandbox
	// itself; a tool that fails is an Observation.
	Run(ctx context.Context, tb *episode.Toolbox, c Call) (episode.Observation, error)
	// Result is the message that returns an observation to the model.
	Result(c Call, obs episode.Observation, b Budget) model.Message
	// Reject is the message that reports a format error to the model.
	Reject(e *FormatError) model.Message
}

// Prompt is what the opening messages are made of.
type Prompt struct {
	Issue    string // the task's problem statement
	RepoRoot string // where the repository is inside the sandbox
	Limits   Limits
	// Instruction, when set, is the user message's template in place of
	// CWM's issue-solving one ({issue} and {repo_root} filled in): another
	// of CWM's environments, such as test generation.
	Instruction string
}

// Call is one tool call found in a reply.
type Call struct {
	// ID is the function call's id (native calling only).
	ID   string
	Tool string
	// Input is the argument text: everything between the tool tags for
	// CWM, the JSON arguments for function calling.
	Input string
}

// FormatError is a reply that holds no runnable tool call. Kind is the name
// CWM gives the error class ("FormatError" or "NoSuchToolError"), which is
// part of the text fed back.
type FormatError struct {
	Kind string
	Msg  string
}

func (e *FormatError) Error() string { return e.Kind + ": " + e.Msg }

func formatErrorf(format string, args ...any) *FormatError {
	return &FormatError{Kind: "FormatError", Msg: fmt.Sprintf(format, args...)}
}

// Budget is what the episode has left, reported with tool results.
type Budget struct {
	// RemainingTurns is max turns minus the turns taken.
	RemainingTurns int
	// UsedTokens is the context used by the last model call (its prompt
	// plus its completion).
	UsedTokens int64
	// ContextTokens is the context window of the episode.
	ContextTokens int
}

// NewProtocol returns the protocol called name ("cwm" or "openai").
// toolRole is the role of tool-result messages in the cwm protocol ("tool",
// as CWM's chat format has it, or "user" for servers that refuse tool
// messages without a tool_call_id).
func NewProtocol(name, toolRole string) (Protocol, error) {
	switch name {
	case "cwm":
		switch toolRole {
		case "":
			toolRole = model.RoleTool
		case model.RoleTool, model.RoleUser:
		default:
			return nil, errkind.Errorf(errkind.Usage, "tool role %q: want tool or user", toolRole)
		}
		return &CWMProtocol{ToolRole: toolRole}, nil
	case "openai":
		return &FunctionProtocol{}, nil
	}
	return nil, errkind.Errorf(errkind.Usage, "unknown protocol %q: want cwm or openai", name)
}
