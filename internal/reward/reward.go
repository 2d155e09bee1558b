package reward

import "cwm/internal/errkind"

// Mapping turns a grading into a scalar reward.
type Mapping struct {
	// Kind is "binary" (1 resolved, 0 otherwise) or "cwm" (CWM-SPEC 2.3:
	// +1 resolved, otherwise a similarity shaping).
	Kind string
	// Threshold is the similarity at or above which an unresolved patch
	// earns the middle reward (cwm only; default 0.5).
	Threshold float64
	// Scale selects the cwm mapping. 0 is the paper's text: +1 resolved,
	// 0 when the similarity reaches Threshold, else -1. A positive Scale is
	// CWM's released code (its SimilaritiesRewardFn): -1+Scale resolved,
	// -1+Threshold*Scale when the similarity reaches Threshold, else -1;
	// Scale 2 is its "similarities_2" and equals the paper's mapping at
	// Threshold 0.5.
	Scale float64
}

// Validate checks the mapping and fills in the default threshold; a
// wrong one is an errkind.Usage error (it comes from flags or options).
func (m *Mapping) Validate() error {
	switch m.Kind {
	case "binary", "cwm":
	default:
		return errkind.Errorf(errkind.Usage, "reward kind %q is not binary or cwm", m.Kind)
	}
	if m.Threshold == 0 {
		m.Threshold = 0.5
	}
	if !(m.Threshold > 0 && m.Threshold <= 1) {
		return errkind.Errorf(errkind.Usage, "similarity threshold %v is not in (0, 1]", m.Threshold)
	}
	if m.Scale < 0 {
		return errkind.Errorf(errkind.Usage, "reward scale %v is negative", m.Scale)
	}
	return nil
}

// Reward maps a verdict to the reward. similarity is nil when there is
// none (the gold patch has no text file): the similarity case then never
// applies, as in CWM, whose reward is then the lowest.
func (m Mapping) Reward(resolved bool, similarity *float64) float64 {
	if m.Kind == "binary" {
		if resolved {
			return 1
		}
		return 0
	}
	shaped := similarity != nil && *similarity >= m.Threshold
	switch {
	case m.Scale == 0 && resolved:
		return 1
	case m.Scale == 0 && shaped:
		return 0
	case resolved:
		return -1 + m.Scale
	case shaped:
		return -1 + m.Threshold*m.Scale
	}
	return -1
}

// Advantages are the group-relative advantages of GRPO-style trainers:
// each reward minus the mean reward of its group (the samples of one
// task). Dividing by the group's standard deviation, as some trainers do,
// is left to them: a group whose rewards are all equal has none.
func Advantages(rewards []float64) []float64 {
	if len(rewards) == 0 {
		return nil
	}
	mean := 0.0
	for _, r := range rewards {
		mean += r
	}
	mean /= float64(len(rewards))
	out := make([]float64, len(rewards))
	for i, r := range rewards {
		out[i] = r - mean
	}
	return out
}
