package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"cwm/internal/model"
)

// RewardModel predicts an episode's reward from its final state, in
// place of running the hidden tests (--sim-reward). It asks an
// OpenAI-compatible endpoint through a WorldModel's client, with the same
// timeout, attempts and byte cap.
type RewardModel struct{ w *WorldModel }

// NewRewardModel returns the reward model cfg names.
func NewRewardModel(cfg WorldModelConfig) (*RewardModel, error) {
	w, err := NewWorldModel(cfg)
	if err != nil {
		return nil, err
	}
	return &RewardModel{w: w}, nil
}

// rewardPrompt is the reward model's instruction and reply shape.
const rewardPrompt = "You are a reward model for an agent that fixes issues in a code repository. " +
	"Given the issue and the agent's final patch, predict whether the repository's hidden tests for the issue pass with the patch applied, " +
	"and the reward. Reply with one JSON object and nothing else:\n" +
	`{"resolved": <true or false>, "reward": <a number>}`

// RewardMessages renders an episode's final state as the messages a
// reward model is sent; cwm export transitions writes the same.
func RewardMessages(statement, patch string) []model.Message {
	var notes []string
	st := cut(&notes, "statement", statement, maxStatement)
	p := cut(&notes, "patch", patch, 4*maxDiff)
	body := "<statement>\n" + st + "\n</statement>\n<patch>\n" + p + "\n</patch>"
	if len(notes) > 0 {
		body += "\n<truncated>\n" + strings.Join(notes, ", ") + "\n</truncated>"
	}
	return []model.Message{{Role: model.RoleSystem, Content: rewardPrompt}, {Role: model.RoleUser, Content: body}}
}

// RewardReply is a reward model's answer.
type RewardReply struct {
	Resolved bool    `json:"resolved"`
	Reward   float64 `json:"reward"`
}

// ParseRewardReply reads a reward model's reply: one JSON object with a
// boolean resolved and a number reward, alone or in a ```json fence.
func ParseRewardReply(content string) (RewardReply, error) {
	var r struct {
		Resolved *bool    `json:"resolved"`
		Reward   *float64 `json:"reward"`
	}
	if err := decodeReply(content, &r); err != nil {
		return RewardReply{}, fmt.Errorf("reward model reply: %w", err)
	}
	if r.Resolved == nil || r.Reward == nil {
		return RewardReply{}, errors.New("reward model reply: want resolved and reward")
	}
	return RewardReply{Resolved: *r.Resolved, Reward: *r.Reward}, nil
}

// Predict asks for the reward of patch on the task of statement, up to
// the configured attempts. An error that is not ctx's names the cause of
// the last failed attempt.
func (m *RewardModel) Predict(ctx context.Context, statement, patch string) (RewardReply, error) {
	msgs := RewardMessages(statement, patch)
	cause := ""
	for range m.w.cfg.Attempts {
		content, a := m.w.complete(ctx, msgs)
		if a.err != nil {
			return RewardReply{}, a.err
		}
		if a.cause != "" {
			cause = a.cause
			continue
		}
		r, err := ParseRewardReply(content)
		if err == nil {
			return r, nil
		}
		cause = CauseInvalidJSON
	}
	return RewardReply{}, fmt.Errorf("reward model: no valid reply in %d attempts (last: %s)", m.w.cfg.Attempts, cause)
}
