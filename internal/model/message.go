package model

// Message is one chat message in the OpenAI chat format. It is both what is
// sent to the model and what a trajectory stores, so the stored
// conversation is exactly the one the model saw.
type Message struct {
	Role    string `json:"role"` // system, user, assistant or tool
	Content string `json:"content"`
	// ToolCalls are an assistant's native function calls.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is a native function call made by the model.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // always "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and carries its JSON arguments as the
// model wrote them (possibly invalid JSON).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Roles of chat messages.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Tool describes a function offered to the model for native function
// calling; Parameters is its JSON schema.
type Tool struct {
	Name        string
	Description string
	Parameters  map[string]any
}

// EstimateTokens is the token count assumed for n bytes when a server
// reports no usage: about four bytes per token for English text and code.
func EstimateTokens(n int) int64 { return int64((n + 3) / 4) }

// messagesBytes is the size of the text of msgs, for token estimates.
func messagesBytes(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
		for _, c := range m.ToolCalls {
			n += len(c.Function.Name) + len(c.Function.Arguments)
		}
	}
	return n
}
