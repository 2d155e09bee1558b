package export

import "cwm/internal/model"

// The row types are the schema of every file an export writes, in JSONL
// and in Parquet alike: the json and parquet tags name the same columns,
// every field is always written (lists as [] when empty, never left out),
// so that a reader sees the same columns in every row and the rows of the
// two formats compare equal once read back (the pyarrow test checks it).

// SFTRow is one trajectory as a chat for supervised fine-tuning.
type SFTRow struct {
	// ID is the trajectory's key, "TASK_ID#SAMPLE".
	ID       string       `json:"id" parquet:"id"`
	TaskID   string       `json:"task_id" parquet:"task_id"`
	Sample   int64        `json:"sample" parquet:"sample"`
	Repo     string       `json:"repo" parquet:"repo"`
	Messages []SFTMessage `json:"messages" parquet:"messages,list"`
	// Reward and Resolved are the trajectory's grading (null when it was
	// not graded), so that a trainer can filter or weight whole rows.
	Reward   *float64 `json:"reward" parquet:"reward,optional"`
	Resolved *bool    `json:"resolved" parquet:"resolved,optional"`
}

// SFTMessage is an OpenAI chat message with its loss weight: 1 when the
// trainer computes the loss on the message's tokens, 0 when they are
// context only. The field is the per-message training flag that axolotl's
// chat_template datasets read with `message_field_training: weight` (and
// the ShareGPT/FastChat `weight` 0/1 convention it comes from). The
// message's fields are flattened into it, in JSON and in Parquet alike.
type SFTMessage struct {
	TurnMessage
	Weight int64 `json:"weight" parquet:"weight"`
}

// TurnMessage is an OpenAI chat message without a weight: the state and
// the observation of a triplet.
type TurnMessage struct {
	Role       string     `json:"role" parquet:"role"`
	Content    string     `json:"content" parquet:"content"`
	ToolCalls  []ToolCall `json:"tool_calls" parquet:"tool_calls,list"`
	ToolCallID string     `json:"tool_call_id" parquet:"tool_call_id"`
}

// ToolCall is a native function call, as OpenAI's messages carry it.
type ToolCall struct {
	ID       string   `json:"id" parquet:"id"`
	Type     string   `json:"type" parquet:"type"`
	Function Function `json:"function" parquet:"function"`
}

// Function names the called function and its arguments as written.
type Function struct {
	Name      string `json:"name" parquet:"name"`
	Arguments string `json:"arguments" parquet:"arguments"`
}

// PretrainRow is one trace as CWM's token text.
type PretrainRow struct {
	// ID is the trace line's id.
	ID string `json:"id" parquet:"id"`
	// Kind is "function" (a line of cwm trace func) or "episode" (a line
	// of cwm trace repo, which has a test).
	Kind   string `json:"kind" parquet:"kind"`
	Repo   string `json:"repo" parquet:"repo"`
	Status string `json:"status" parquet:"status"`
	// Text is the whole trace from <|begin_of_text|> to <|end_of_text|>.
	Text string `json:"text" parquet:"text"`
}

// TripletRow is one step of a trajectory: what the agent saw, what it did
// and what the environment answered.
type TripletRow struct {
	// ID is "TASK_ID#SAMPLE#TURN"; TaskID, Sample and Turn join it back
	// to the trajectory and to its steps (steps[].turn).
	ID     string `json:"id" parquet:"id"`
	TaskID string `json:"task_id" parquet:"task_id"`
	Sample int64  `json:"sample" parquet:"sample"`
	Turn   int64  `json:"turn" parquet:"turn"`
	Repo   string `json:"repo" parquet:"repo"`
	// State is the conversation before the action, bounded (see
	// StateBytes); StateDropped counts the messages left out of it.
	State        []TurnMessage `json:"state" parquet:"state,list"`
	StateDropped int64         `json:"state_dropped" parquet:"state_dropped"`
	Action       TurnMessage   `json:"action" parquet:"action"`
	// Observation is the environment's reply: the messages between the
	// action and the agent's next turn.
	Observation []TurnMessage `json:"observation" parquet:"observation,list"`
}

func toolCalls(m model.Message) []ToolCall {
	calls := make([]ToolCall, 0, len(m.ToolCalls))
	for _, c := range m.ToolCalls {
		calls = append(calls, ToolCall{ID: c.ID, Type: c.Type, Function: Function{Name: c.Function.Name, Arguments: c.Function.Arguments}})
	}
	return calls
}

func turnMessage(m model.Message) TurnMessage {
	return TurnMessage{Role: m.Role, Content: m.Content, ToolCalls: toolCalls(m), ToolCallID: m.ToolCallID}
}

// sized rows estimate their bytes, so that a Parquet row group is cut by
// size as well as by count (trajectories vary from 1 KB to megabytes).
type sized interface{ size() int }

func (r SFTRow) size() int {
	n := len(r.ID) + len(r.TaskID) + len(r.Repo) + 32
	for _, m := range r.Messages {
		n += len(m.Content) + len(m.Role) + 16
		for _, c := range m.ToolCalls {
			n += len(c.Function.Arguments) + len(c.Function.Name) + 32
		}
	}
	return n
}

func (r PretrainRow) size() int { return len(r.ID) + len(r.Text) + len(r.Repo) + 32 }

func (r TripletRow) size() int {
	n := len(r.ID) + len(r.TaskID) + len(r.Repo) + len(r.Action.Content) + 48
	for _, ms := range [][]TurnMessage{r.State, r.Observation} {
		for _, m := range ms {
			n += len(m.Content) + len(m.Role) + 16
		}
	}
	return n
}
