package search

import (
	"context"
	"math"
)

// mcts runs UCB1 tree search: from the root it descends through fully
// expanded nodes by UCB1, expands the node it stops at with one new policy
// sample (seed: its number of children), evaluates the child (real reward
// if it submitted, value model otherwise) and backpropagates the value.
// It ends when the budget runs out, when every path has reached a
// submission or the depth limit, or when a patch resolves the task.
func (r *run) mcts(ctx context.Context, root *node) error {
	c := r.o.UCB
	if c == 0 {
		c = math.Sqrt2
	}
	for !root.exhausted {
		n := root
		for len(n.children) >= r.o.Width {
			n = r.pick(n, c)
		}
		child, err := r.expand(ctx, n, int64(len(n.children)))
		if err != nil {
			return err
		}
		for x := child; x != nil; x = x.parent {
			x.Visits++
			x.total += child.Value
			if x.Reward == nil {
				x.Value = x.total / float64(x.Visits)
			}
			x.exhausted = x.terminal(r.o.Depth) || len(x.children) >= r.o.Width && allExhausted(x.children)
		}
		if solved(child) {
			return nil
		}
	}
	return nil
}

// pick is the UCB1 choice among n's children not yet exhausted; the loop
// in mcts only descends into a node that has one.
func (r *run) pick(n *node, c float64) *node {
	var best *node
	bestScore := math.Inf(-1)
	for _, ch := range n.children {
		if ch.exhausted {
			continue
		}
		s := ch.total/float64(ch.Visits) + c*math.Sqrt(math.Log(float64(n.Visits))/float64(ch.Visits))
		if s > bestScore {
			best, bestScore = ch, s
		}
	}
	return best
}

func allExhausted(ns []*node) bool {
	for _, n := range ns {
		if !n.exhausted {
			return false
		}
	}
	return true
}
