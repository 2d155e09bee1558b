package batch

import (
	"fmt"

	"cwm/internal/jsonl"
	"cwm/internal/shard"
)

// Order is the order a plan runs its items in.
type Order int

const (
	// InOrder runs the items in their order.
	InOrder Order = iota
	// UnfinishedLast runs first the items that come after the last one an
	// earlier run finished, then the unfinished ones before it. Items are
	// taken in order, so those were in flight when that run was killed,
	// and they are the slowest (a kill most likely lands in a long item):
	// redone first, they would hold every worker again before anything
	// new is written, and under repeated kills the stage would never get
	// past them.
	UnfinishedLast
)

// Spec says which items a batch stage has and where it writes them.
type Spec[T any] struct {
	Items []T
	// Key is an item's key: what its output line records, and what
	// decides its shard.
	Key func(T) string
	// Out is the stage's JSONL output; OutKey the key of one of its lines
	// (jsonl.Field("id"), say). An empty Out means nothing is done yet.
	Out    string
	OutKey func(line []byte) (string, error)
	// Shard is the part of the items this process takes (shard.All).
	Shard shard.Shard
	Order Order
}

// Plan is what one run of a stage has to do.
type Plan[T any] struct {
	// Mine are the items of this process's shard; Todo those of them not
	// in the output yet, in the order to run them.
	Mine, Todo []T
	// Done holds the keys of the lines already in the output.
	Done map[string]bool
}

// Resumed is how many of the shard's items an earlier run finished.
func (p Plan[T]) Resumed() int { return len(p.Mine) - len(p.Todo) }

// Resume reads the keys of the lines already in s.Out (a torn last line,
// left by a crash, does not count) and plans the run: the items of
// s.Shard whose key is not among them, in s.Order.
func Resume[T any](s Spec[T]) (Plan[T], error) {
	done := map[string]bool{}
	if s.Out != "" {
		var err error
		if done, err = jsonl.Keys(s.Out, s.OutKey); err != nil {
			return Plan[T]{}, fmt.Errorf("cannot resume: %w", err)
		}
	}
	return NewPlan(s.Items, s.Key, s.Shard, done, s.Order), nil
}

// NewPlan keeps the items of part and, of those, the ones whose key is not
// in done, in the given order.
func NewPlan[T any](items []T, key func(T) string, part shard.Shard, done map[string]bool, order Order) Plan[T] {
	p := Plan[T]{Done: done}
	last := -1 // in Mine: the last item done
	for _, it := range items {
		k := key(it)
		if !part.Has(k) {
			continue
		}
		if done[k] {
			last = len(p.Mine)
		}
		p.Mine = append(p.Mine, it)
	}
	var unfinished []T
	for i, it := range p.Mine {
		switch {
		case done[key(it)]:
		case order == UnfinishedLast && i < last:
			unfinished = append(unfinished, it)
		default:
			p.Todo = append(p.Todo, it)
		}
	}
	p.Todo = append(p.Todo, unfinished...)
	return p
}
