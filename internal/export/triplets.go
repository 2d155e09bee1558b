package export

import (
	"strconv"

	"cwm/internal/model"
	"cwm/internal/trajectory"
)

// DefaultStateBytes bounds a triplet's state: 256 KiB of message text,
// about 64k tokens at four bytes a token, half the 131,072-token context
// CWM's agent ran with (CWM-SPEC 2.2), so that a state and its next
// observation fit a world model's context.
const DefaultStateBytes = 256 << 10

// messageBytes is what a message counts against the state's bound: its
// content and its tool calls' names and arguments.
func messageBytes(m model.Message) int {
	n := len(m.Content)
	for _, c := range m.ToolCalls {
		n += len(c.Function.Name) + len(c.Function.Arguments)
	}
	return n
}

// tripletRows cuts a trajectory into (state, action, observation) rows:
// one per assistant message that the environment answered (a last reply
// that nothing answered, such as the summary after a submit, has no
// observation and gives no row).
//
// The state is the conversation before the action, bounded by stateBytes
// (0: unbounded): the prompt (the messages before the first assistant
// message: system prompt and task) is always kept, then the latest
// messages that fit in what the prompt leaves; the messages between the
// two are left out and counted in StateDropped. A state is cut only at a
// message's boundary, never inside one, and its kept tail starts with an
// assistant message.
func tripletRows(tr *trajectory.Trajectory, repo string, stateBytes int) []TripletRow {
	msgs := tr.Messages
	prompt := len(msgs)
	for i, m := range msgs {
		if m.Role == model.RoleAssistant {
			prompt = i
			break
		}
	}
	var rows []TripletRow
	turn := 0
	for a, m := range msgs {
		if m.Role != model.RoleAssistant {
			continue
		}
		turn++
		end := a + 1
		for end < len(msgs) && msgs[end].Role != model.RoleAssistant {
			end++
		}
		if end == a+1 {
			continue
		}
		state, dropped := boundedState(msgs[:a], prompt, stateBytes)
		obs := make([]TurnMessage, 0, end-a-1)
		for _, o := range msgs[a+1 : end] {
			obs = append(obs, turnMessage(o))
		}
		rows = append(rows, TripletRow{
			ID:     tr.TaskID + "#" + strconv.Itoa(tr.Sample) + "#" + strconv.Itoa(turn),
			TaskID: tr.TaskID, Sample: int64(tr.Sample), Turn: int64(turn), Repo: repo,
			State: state, StateDropped: int64(dropped), Action: turnMessage(m), Observation: obs,
		})
	}
	return rows
}

// boundedState is msgs (the conversation before an action) within limit
// bytes: the first prompt messages, then the latest ones that fit.
func boundedState(msgs []model.Message, prompt, limit int) ([]TurnMessage, int) {
	from := 0 // the first message after the prompt that is kept
	if prompt > len(msgs) {
		prompt = len(msgs)
	}
	if limit > 0 {
		left := limit
		for _, m := range msgs[:prompt] {
			left -= messageBytes(m)
		}
		from = len(msgs)
		for from > prompt && left-messageBytes(msgs[from-1]) >= 0 {
			from--
			left -= messageBytes(msgs[from])
		}
		// A kept tail starts at an agent's turn: an observation without
		// the call it answers (a tool message without its tool_calls) is
		// not a conversation a chat template accepts.
		for from > prompt && from < len(msgs) && msgs[from].Role != model.RoleAssistant {
			from++
		}
	} else {
		from = prompt
	}
	state := make([]TurnMessage, 0, prompt+len(msgs)-from)
	for _, m := range msgs[:prompt] {
		state = append(state, turnMessage(m))
	}
	for _, m := range msgs[from:] {
		state = append(state, turnMessage(m))
	}
	return state, from - prompt
}
