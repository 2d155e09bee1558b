package export

import (
	"strconv"

	"cwm/internal/errkind"
	"cwm/internal/model"
	"cwm/internal/trajectory"
)

// Mask is the observation-masking policy of cwm export sft: which of the
// environment's turns carry loss weight 0.
type Mask string

const (
	// MaskNone trains on every message, the environment's turns included.
	MaskNone Mask = "none"
	// MaskAll trains on the agent's turns only: every message that is not
	// the assistant's (the prompt included) has weight 0, the usual
	// assistant-only loss of supervised fine-tuning.
	MaskAll Mask = "all"
	// MaskRandom masks each observation with probability 1/2, decided by
	// the seed and the observation's place: CWM's mid-training on
	// ForagerAgent trajectories, "trained on both agent and environment
	// turns, with the loss masked on a random 50% of observations" (CWM
	// paper, section 2).
	MaskRandom Mask = "random"
)

// ParseMask checks a --mask value.
func ParseMask(s string) (Mask, error) {
	switch m := Mask(s); m {
	case MaskNone, MaskAll, MaskRandom:
		return m, nil
	}
	return "", errkind.Errorf(errkind.Usage, "unknown mask %q (want none, all or random)", s)
}

// isObservation reports whether a message of this role is the
// environment's: a tool result, or a user message after the agent's first
// turn (format errors, and tool results sent with --tool-role user). The
// system prompt and the task statement come before the first assistant
// message and are not observations: none and random keep them at weight 1,
// as CWM trained on whole trajectories.
func isObservation(role string, seenAssistant bool) bool {
	switch role {
	case model.RoleTool:
		return true
	case model.RoleUser:
		return seenAssistant
	}
	return false
}

// masked reports whether observation i of trajectory id is masked under
// the random policy: a coin of the seed, the id and i, so the decision is
// the same whatever the order or the sharding of the input, and
// independent between observations.
func masked(seed uint64, id string, i int) bool {
	return coin(seed, id, strconv.Itoa(i))&1 == 1
}

// sftRow turns a trajectory into its chat with weights.
func sftRow(tr *trajectory.Trajectory, repo string, mask Mask, seed uint64) SFTRow {
	id := trajectory.Key(tr.TaskID, tr.Sample)
	row := SFTRow{ID: tr.TaskID + "#" + strconv.Itoa(tr.Sample), TaskID: tr.TaskID, Sample: int64(tr.Sample),
		Repo: repo, Messages: make([]SFTMessage, 0, len(tr.Messages)), Reward: tr.Reward, Resolved: tr.Resolved}
	seen := false
	for i, m := range tr.Messages {
		w := int64(1)
		switch {
		case mask == MaskAll && m.Role != model.RoleAssistant:
			w = 0
		case mask == MaskRandom && isObservation(m.Role, seen) && masked(seed, id, i):
			w = 0
		}
		if m.Role == model.RoleAssistant {
			seen = true
		}
		row.Messages = append(row.Messages, SFTMessage{TurnMessage: turnMessage(m), Weight: w})
	}
	return row
}
