package search

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"cwm/internal/agent"
	"cwm/internal/model"
)

// valueContextBytes bounds the diff and the observation in the value
// prompt, so that a large state cannot overflow the value model's context.
const valueContextBytes = 16 << 10

const valueSystem = "You judge states of a software engineering agent's episode. Given the task, the agent's current diff against the repository and its last observation, reply with one number between 0 and 1: the probability that continuing from this state ends in a patch that resolves the task. Reply with the number only."

// valuePrompt is what the value model is asked about state n.
func valuePrompt(statement string, n *node) []model.Message {
	diff := n.diff
	if diff == "" {
		diff = "(no changes)"
	}
	obs := n.Observation
	if len(n.steps) > 0 {
		obs = n.steps[len(n.steps)-1].Observation
	}
	user := "## Task\n" + statement + "\n\n## Diff\n" + agent.TruncateText(diff, valueContextBytes) +
		"\n\n## Last observation\n" + agent.TruncateText(obs, valueContextBytes) + "\n\nProbability (0 to 1):"
	return []model.Message{{Role: model.RoleSystem, Content: valueSystem}, {Role: model.RoleUser, Content: user}}
}

var number = regexp.MustCompile(`[-+]?(?:\d+\.?\d*|\.\d+)`)

// parseValue takes the first number of a value model's reply; one outside
// [0,1], or none, is an error that says what came back.
func parseValue(reply string) (float64, error) {
	m := number.FindString(reply)
	if m == "" {
		return 0, fmt.Errorf("value model reply %q holds no number", cut(reply))
	}
	v, err := strconv.ParseFloat(m, 64)
	if err != nil || v < 0 || v > 1 {
		return 0, fmt.Errorf("value model reply %q: %s is not a number in [0,1]", cut(reply), m)
	}
	return v, nil
}

func cut(s string) string { return agent.TruncateText(strings.TrimSpace(s), 80) }

// value asks the value model for n's value. A reply without a usable
// number scores 0 and is recorded (verr); err is for an endpoint that
// failed after its retries.
func (r *run) value(ctx context.Context, n *node) (v float64, verr string, err error) {
	c := r.o.Value
	if c == nil {
		c = r.o.Policy
	}
	rep, err := c.Complete(ctx, model.Request{Messages: valuePrompt(r.task.ProblemStatement, n)})
	if err != nil {
		return 0, "", fmt.Errorf("ask the value model: %w", err)
	}
	v, perr := parseValue(rep.Message.Content)
	if perr != nil {
		return 0, perr.Error(), nil
	}
	return v, "", nil
}
