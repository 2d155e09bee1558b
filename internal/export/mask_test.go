package export

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/model"
	"cwm/internal/trajectory"
)

// synthTrajectory is a cwm-protocol conversation of n turns, each an
// assistant call answered by a tool result.
func synthTrajectory(task string, n int) *trajectory.Trajectory {
	tr := &trajectory.Trajectory{TaskID: task, Messages: []model.Message{
		{Role: model.RoleSystem, Content: "sys"}, {Role: model.RoleUser, Content: "task"}}}
	for i := range n {
		tr.Messages = append(tr.Messages,
			model.Message{Role: model.RoleAssistant, Content: fmt.Sprintf("<tool: bash>\necho %d\n</tool>", i)},
			model.Message{Role: model.RoleTool, Content: fmt.Sprintf("<output>\n%d\n</output>", i)})
	}
	return tr
}

func weights(r SFTRow) []int64 {
	var w []int64
	for _, m := range r.Messages {
		w = append(w, m.Weight)
	}
	return w
}

// TestMaskPolicies: none trains on everything, all on the assistant's
// messages only, random on the prompt and every agent turn and on about
// half of the observations (CWM paper, section 2: "trained on both agent
// and environment turns, with the loss masked on a random 50% of
// observations"), the same half for the same seed.
func TestMaskPolicies(t *testing.T) {
	tr := synthTrajectory("acme__web-1", 3)
	cases := []struct {
		mask Mask
		want []int64
	}{
		{MaskNone, []int64{1, 1, 1, 1, 1, 1, 1, 1}},
		{MaskAll, []int64{0, 0, 1, 0, 1, 0, 1, 0}},
	}
	for _, c := range cases {
		if d := cmp.Diff(c.want, weights(sftRow(tr, "acme/web", c.mask, 1))); d != "" {
			t.Errorf("sftRow(mask %s) weights (-want +got):\n%s", c.mask, d)
		}
	}

	// Over 400 trajectories of 10 observations each: the random policy
	// masks observations only, the same ones for the same seed, others
	// for another seed, and about half of them (4000 fair coins: 50% ±
	// 2.5 points is more than 3 standard deviations).
	masked, observations, changed := 0, 0, 0
	for i := range 400 {
		tr := synthTrajectory(fmt.Sprintf("repo__r-%d", i), 10)
		a := sftRow(tr, "repo/r", MaskRandom, 7)
		if d := cmp.Diff(a, sftRow(tr, "repo/r", MaskRandom, 7)); d != "" {
			t.Fatalf("two exports with seed 7 differ:\n%s", d)
		}
		b := sftRow(tr, "repo/r", MaskRandom, 8)
		for j, m := range a.Messages {
			if m.Role != model.RoleTool {
				if m.Weight != 1 {
					t.Fatalf("trajectory %d message %d (%s) masked: only observations are", i, j, m.Role)
				}
				continue
			}
			observations++
			if m.Weight == 0 {
				masked++
			}
			if m.Weight != b.Messages[j].Weight {
				changed++
			}
		}
	}
	share := float64(masked) / float64(observations)
	if share < 0.475 || share > 0.525 {
		t.Errorf("random masked %d of %d observations (%.3f), want about half", masked, observations, share)
	}
	if c := float64(changed) / float64(observations); c < 0.4 || c > 0.6 {
		t.Errorf("seeds 7 and 8 decide %.3f of the observations differently, want about half", c)
	}
}

// TestObservations: a user message after the agent's first turn (a format
// error, a tool result sent with --tool-role user) is an observation; the
// task statement before it is not.
func TestObservations(t *testing.T) {
	msgs := []model.Message{{Role: "system"}, {Role: "user"}, {Role: "assistant"}, {Role: "user"}, {Role: "assistant"}, {Role: "tool"}}
	var got []bool
	seen := false
	for _, m := range msgs {
		got = append(got, isObservation(m.Role, seen))
		seen = seen || m.Role == model.RoleAssistant
	}
	if d := cmp.Diff([]bool{false, false, false, true, false, true}, got); d != "" {
		t.Errorf("isObservation (-want +got):\n%s", d)
	}
}
