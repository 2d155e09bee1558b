package search

import (
	"context"
	"fmt"

	"cwm/internal/trajectory"
)

// count adds a tool call to the budgets' numbers: a real execution, or,
// when the world model answered it and nothing ran for real, one avoided.
func (r *run) count(rec *trajectory.Sim) {
	if rec == nil {
		r.sum.Execs++
		return
	}
	for _, n := range rec.Failures {
		r.sum.WorldModelCalls += n
	}
	if rec.Predicted != nil {
		r.sum.WorldModelCalls++
	}
	if rec.Diverged {
		r.sum.Divergences++
	}
	if rec.Real == nil {
		r.sum.ExecsAvoided++
		return
	}
	r.sum.Execs++
}

// predictReward scores c's submitted patch by the reward model
// (--sim-reward) instead of a real grading: one model call, the reward
// flagged as predicted. A reward model that fails scores 0 and says why,
// as a value model's reply without a number does.
func (r *run) predictReward(ctx context.Context, c *node) error {
	if err := r.spendCall(); err != nil {
		return err
	}
	r.sum.RewardCalls++
	rep, err := r.o.Sim.Reward.Predict(ctx, r.task.ProblemStatement, *c.submitted)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("ask the reward model: %w", err)
		}
		c.ValueError = err.Error()
		return nil
	}
	v := rep.Reward
	c.Reward, c.Value, c.resolved, c.RewardPredicted = &v, v, &rep.Resolved, true
	return nil
}
