// Package trajectory is the record of one agent episode, one JSONL line of
// cwm forage: the conversation in OpenAI chat format (ready for supervised
// fine-tuning), the steps with timings, the exit reason, the final diff
// and the submitted patch, tokens, cost, retries, and the reward fields a
// grading fills. It is the one statement of that schema: forage writes it,
// and reward, dedup and the summaries read it.
package trajectory

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"cwm/internal/model"
)

// ExitReason says why an episode ended.
type ExitReason string

const (
	// ExitSubmitted: after a successful submit, the model replied without
	// a tool call (its final summary).
	ExitSubmitted ExitReason = "submitted"
	// ExitMaxTurns: the model used its turns (as in CWM, the last reply is
	// recorded but not run).
	ExitMaxTurns ExitReason = "max_turns"
	// ExitContext: the conversation outgrew the context window.
	ExitContext ExitReason = "context"
	// ExitTimeout: the episode's wall time ran out.
	ExitTimeout ExitReason = "timeout"
	// ExitCost: the episode's cost reached its limit.
	ExitCost ExitReason = "cost"
	// ExitFormatErrors: too many consecutive replies without a runnable
	// tool call (in strict mode, one).
	ExitFormatErrors ExitReason = "format_errors"
	// ExitModelError: the model endpoint kept failing after retries. Such
	// an episode measures the server, not the model: forage keeps it out
	// of its output, so that a re-run tries it again.
	ExitModelError ExitReason = "model_error"
	// ExitStopped: the client ended the episode before a submit (cwm
	// serve's NeMo Gym /verify); its final diff is graded.
	ExitStopped ExitReason = "stopped"
)

// Trajectory is the record of one episode, one JSONL line of cwm forage.
type Trajectory struct {
	TaskID   string `json:"task_id"`
	Sample   int    `json:"sample"`
	Model    string `json:"model"`
	Protocol string `json:"protocol"`
	EnvID    string `json:"env_id,omitempty"`
	// Messages is the conversation in OpenAI chat format, exactly as sent
	// to the model plus its last reply.
	Messages []model.Message `json:"messages"`
	Steps    []Step          `json:"steps"`
	// ModelCalls has one entry per model call, in order.
	ModelCalls []ModelCall `json:"model_calls"`
	// ExitReason says why the episode ended; Error gives detail for
	// model_error.
	ExitReason ExitReason `json:"exit_reason"`
	Error      string     `json:"error,omitempty"`
	// Patch is `git diff` of the repository against its starting commit at
	// the end of the episode, new files included, whatever was submitted.
	Patch string `json:"patch"`
	// SubmittedPatch is the content of the last successfully submitted
	// file; null when nothing was submitted.
	SubmittedPatch *string `json:"submitted_patch"`
	// Turns counts the model's replies.
	Turns   int           `json:"turns"`
	Tokens  Tokens        `json:"tokens"`
	Cost    float64       `json:"cost"`
	Retries model.Retries `json:"retries"`
	// Seconds is the episode's wall time; SetupSeconds the part spent
	// preparing the sandbox, ModelSeconds the part waiting for the model.
	Seconds      float64   `json:"seconds"`
	SetupSeconds float64   `json:"setup_seconds"`
	ModelSeconds float64   `json:"model_seconds"`
	StartedAt    time.Time `json:"started_at"`

	// Reward fields are null until a grading fills them: the reward, whether
	// the hidden tests pass, the patch similarity to the oracle (SWE-RL
	// shaping) and the group-relative advantage (GRPO, computed over the
	// samples of a task).
	Reward     *float64 `json:"reward"`
	Resolved   *bool    `json:"resolved"`
	Similarity *float64 `json:"similarity"`
	Advantage  *float64 `json:"advantage"`

	// Sim is the sim backend's settings and totals (docs/sim.md); absent
	// for a real episode without recorded contexts.
	Sim *SimSummary `json:"sim,omitempty"`
}

// Tokens is an episode's token usage.
type Tokens struct {
	// Prompt and Completion sum over all model calls.
	Prompt     int64 `json:"prompt"`
	Completion int64 `json:"completion"`
	// Context is the context the last call used (its prompt plus its
	// completion): what the context limit applies to.
	Context int64 `json:"context"`
	// Estimated is set when some call's usage was estimated (bytes/4)
	// because the server reported none.
	Estimated bool `json:"estimated,omitempty"`
}

// ModelCall is the accounting of one model call.
type ModelCall struct {
	Turn             int     `json:"turn"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	Estimated        bool    `json:"estimated,omitempty"`
	Cost             float64 `json:"cost"`
	// FinishReason is the server's: "stop", "length" (cut at max tokens),
	// "tool_calls".
	FinishReason string  `json:"finish_reason"`
	Retries      int     `json:"retries"`
	Seconds      float64 `json:"seconds"`
	// Reasoning is the model's thinking for this reply when its server
	// returned it beside the message (see docs/forage.md); the message in
	// Messages is what the model was shown again on later turns.
	Reasoning string `json:"reasoning,omitempty"`
}

// Step is one tool call (or one reply without a runnable call) and what
// came of it.
type Step struct {
	// Turn is the 1-based reply the step belongs to.
	Turn int `json:"turn"`
	// Tool is the tool called; empty for a format error.
	Tool string `json:"tool,omitempty"`
	// Action is the tool's input as the model wrote it (the command, the
	// edit block, the JSON arguments); for a format error, the reply.
	Action string `json:"action"`
	// Observation is the tool's feedback, or the format error's message.
	Observation string `json:"observation"`
	// OK is whether the tool did what was asked.
	OK bool `json:"ok"`
	// ExitCode is a bash command's status; -1 when its session restarted.
	ExitCode *int `json:"exit_code,omitempty"`
	// FormatError is set when the reply held no runnable call.
	FormatError bool `json:"format_error,omitempty"`
	// ModelSeconds is the model call that produced the reply (on the
	// reply's first step); Seconds the tool's run.
	ModelSeconds float64 `json:"model_seconds"`
	Seconds      float64 `json:"seconds"`
	// Sim is the sim backend's record of a classified bash command: the
	// context, the (predicted, real) pair, what the agent saw.
	Sim *Sim `json:"sim,omitempty"`
}

// Grade is a grading's verdict on an episode. Nil fields are left unset.
type Grade struct {
	Reward     *float64
	Resolved   *bool
	Similarity *float64
}

// SetGrade stores g's fields in the trajectory.
func (tr *Trajectory) SetGrade(g Grade) {
	if g.Reward != nil {
		tr.Reward = g.Reward
	}
	if g.Resolved != nil {
		tr.Resolved = g.Resolved
	}
	if g.Similarity != nil {
		tr.Similarity = g.Similarity
	}
}

// Key identifies a trajectory among the samples of every task: its task id
// and sample.
func Key(taskID string, sample int) string { return taskID + "\x00" + strconv.Itoa(sample) }

// LineKey is Key of a trajectory line, without decoding the rest of it: the
// resume key of a stage that writes trajectories. A line without task_id
// and sample is not a trajectory, and an error.
func LineKey(line []byte) (string, error) {
	var k struct {
		TaskID *string `json:"task_id"`
		Sample *int    `json:"sample"`
	}
	if err := json.Unmarshal(line, &k); err != nil {
		return "", fmt.Errorf("decode trajectory: %w", err)
	}
	if k.TaskID == nil || k.Sample == nil {
		return "", errors.New("line without task_id and sample: not a trajectory")
	}
	return Key(*k.TaskID, *k.Sample), nil
}
