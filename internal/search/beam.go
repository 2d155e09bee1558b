package search

import (
	"context"
	"sort"
)

// beam keeps, at each depth, the Width best of the Width candidates
// sampled from each kept state (seeds 0..Width-1). Submitted states leave
// the beam with their real reward; the search stops early once one
// resolves the task, since nothing can rank above it.
func (r *run) beam(ctx context.Context, root *node) error {
	frontier := []*node{root}
	for d := 0; d < r.o.Depth && len(frontier) > 0; d++ {
		var next []*node
		for _, p := range frontier {
			for k := 0; k < r.o.Width; k++ {
				c, err := r.expand(ctx, p, int64(k))
				if err != nil {
					return err
				}
				c.Visits = 1
				if solved(c) {
					return nil
				}
				if !c.terminal(r.o.Depth) {
					next = append(next, c)
				}
			}
		}
		sort.SliceStable(next, func(i, j int) bool { return next[i].Value > next[j].Value })
		frontier = next[:min(len(next), r.o.Width)]
	}
	return nil
}

// solved reports whether n's patch, or that of its rollout, resolved the
// task.
func solved(n *node) bool {
	return n.Reward != nil && *n.Reward >= 1 || n.RolloutReward != nil && *n.RolloutReward >= 1
}
