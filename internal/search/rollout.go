package search

import (
	"context"
	"fmt"
)

// rollout evaluates c, MCTS's new child, by playing the policy on from it
// on a branch of its checkpoint (real or simulated, as the search's
// backend) for up to Rollout replies, no deeper than Depth: c's value is
// then the reward of the patch the rollout submitted (graded as a child's
// would be), or else the value model's estimate of the state it ended in.
// Its replies, executions and gradings count in the budgets. Its states
// do not join the tree; its end, when it submitted, is kept as a
// candidate answer, since a resolving patch found there is one.
func (r *run) rollout(ctx context.Context, c *node) error {
	s := c.child(c.Seed)
	s.rolloutOf = c
	ep, err := r.branch(ctx, c, s)
	if err != nil {
		return err
	}
	defer ep.Close()
	for i := 0; i < r.o.Rollout && s.turns < r.o.Depth && s.submitted == nil; i++ {
		calls, ferr, err := r.ask(ctx, s, c.Seed)
		if err != nil {
			return fmt.Errorf("ask the policy in a rollout: %w", err)
		}
		c.Rollout++
		if ferr != nil {
			continue
		}
		if err := r.runCalls(ctx, s, ep, calls); err != nil {
			return fmt.Errorf("in a rollout: %w", err)
		}
	}
	if s.diff, err = ep.Diff(ctx); err != nil {
		return fmt.Errorf("diff at a rollout's end: %w", err)
	}
	if err := r.evaluate(ctx, s); err != nil {
		return err
	}
	c.Value, c.ValueError, c.RolloutReward = s.Value, s.ValueError, s.Reward
	if s.submitted != nil {
		c.rollout = s
	}
	return nil
}
