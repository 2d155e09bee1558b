package cli

import (
	"context"
	"flag"

	"cwm/internal/agent"
	"cwm/internal/env"
	"cwm/internal/reward"
	"cwm/internal/task"
)

// gradeFlags are the reward flags shared by forage and reward.
type gradeFlags struct {
	mapping reward.Mapping
}

func (g *gradeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.mapping.Kind, "reward", "cwm", "reward `kind`: binary (1 resolved, else 0) or cwm (+1 resolved, else 0 when the similarity reaches the threshold, else -1)")
	fs.Float64Var(&g.mapping.Threshold, "similarity-threshold", 0.5, "similarity at or above which an unresolved patch earns the middle cwm reward")
	fs.Float64Var(&g.mapping.Scale, "cwm-scale", 0, "0: the paper's cwm mapping (+1/0/-1); S>0: CWM's released code (-1+S resolved, -1+threshold*S similar, else -1)")
}

// hiddenTestGrader grades an episode as `cwm reward` would: the submitted
// patch, or the final diff when nothing was submitted, against the task's
// hidden tests in a fresh sandbox, and its similarity to the gold patch.
type hiddenTestGrader struct {
	sbs     *env.Sandboxes
	envs    map[string]*env.Env
	mapping reward.Mapping
}

func (g *hiddenTestGrader) Grade(ctx context.Context, t *task.Task, tr *agent.Trajectory) (agent.Grade, error) {
	patch := tr.Patch
	if tr.SubmittedPatch != nil {
		patch = *tr.SubmittedPatch
	}
	res, err := reward.Grade(ctx, g.sbs, g.envs[t.EnvID], t, patch)
	if err != nil {
		return agent.Grade{}, err
	}
	var sim *float64
	if res.Similarity != nil {
		v := res.Similarity.Mean
		sim = &v
	}
	r := g.mapping.Reward(res.Resolved, sim)
	return agent.Grade{Reward: &r, Resolved: &res.Resolved, Similarity: sim}, nil
}
