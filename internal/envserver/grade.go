package envserver

import (
	"context"

	"cwm/internal/reward"
	"cwm/internal/sim"
	"cwm/internal/trajectory"
)

// simOptions are the sim options of a swe episode of plan p: the server's
// with the environment's test command, or nil for the real backend
// without recorded contexts.
func (s *Server) simOptions(p *resetPlan) *sim.Options {
	if s.opts.Sim == nil {
		return nil
	}
	o := *s.opts.Sim
	if p.data.Backend != "sim" {
		if !o.RecordOnly {
			return nil
		}
	} else {
		o.RecordOnly = false
	}
	if o.Classifier.TestCommand == "" {
		o.Classifier.TestCommand = p.env.Test.Command
	}
	return &o
}

// predictReward asks the reward model for the reward of patch in place of
// the real grading (cwm serve --sim-reward): the reward returned is
// flagged predicted, and the trajectory's real reward stays null.
func (t *toolEpisode) predictReward(ctx context.Context, patch string, meta map[string]any) {
	meta["reward_predicted"] = true
	rep, err := t.simOpts.Reward.Predict(ctx, t.task.ProblemStatement, patch)
	if err != nil {
		t.tr.Sim.RewardError = err.Error()
		meta["grade_error"] = err.Error()
		return
	}
	r := rep.Reward
	t.reward = &r
	t.tr.Sim.PredictedReward = &r
	meta["reward"] = r
	meta["resolved"] = rep.Resolved
}

// grade grades patch for the episode's task as cwm reward does (the
// hidden tests in a fresh sandbox, the similarity to the gold patch, the
// server's reward mapping) and puts the reward and its parts in meta. A
// task that cannot be graded leaves the reward null, and meta says why.
func (t *toolEpisode) grade(ctx context.Context, patch string, meta map[string]any) {
	res, err := reward.Grade(ctx, t.s.opts.Sandboxes, t.env, t.task, patch)
	if err != nil {
		meta["grade_error"] = err.Error()
		return
	}
	var sim *float64
	if res.Similarity != nil {
		v := res.Similarity.Mean
		sim = &v
	}
	m := t.s.opts.Mapping
	r := m.Reward(res.Resolved, sim)
	t.reward = &r
	t.tr.SetGrade(trajectory.Grade{Reward: &r, Resolved: &res.Resolved, Similarity: sim})
	sets := map[string]map[string]int{}
	for _, o := range res.Tests {
		c := sets[o.Set]
		if c == nil {
			c = map[string]int{}
			sets[o.Set] = c
		}
		c["total"]++
		if o.Outcome == "pass" {
			c["passed"]++
		}
	}
	meta["reward"] = r
	meta["resolved"] = res.Resolved
	meta["similarity"] = sim
	meta["reward_mapping"] = map[string]any{"kind": m.Kind, "threshold": m.Threshold, "scale": m.Scale}
	meta["apply"] = string(res.Apply)
	meta["tests"] = sets
	if res.Reason != "" {
		meta["reason"] = res.Reason
	}
	if res.SimilarityError != "" {
		meta["similarity_error"] = res.SimilarityError
	}
	meta["grade_seconds"] = res.Seconds.Total
}
