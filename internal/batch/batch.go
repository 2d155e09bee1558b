// Package batch is the one runner of cwm's batch stages. A stage is a
// value (Stage) declared in its domain package beside the keys of its
// lines, from which cwm merge learns what it needs; RunStage is the shell
// every batch stage runs on (the evals, select, forage, reward, tasks
// mutate, commits and validate, trace func and trace repo): it plans a run from
// what an earlier run already wrote (Resume: the keys in the output JSONL,
// this process's shard, the order to go in), marks the shard, runs the
// items with bounded concurrency and cancellation (Run), writes (from the
// collecting loop, or from the worker as it goes: Job.Stream), counts
// them on a progress bar, and tallies outcomes for the stage's summary
// (Tally). trace repo gives RunStage its own Plan (it resumes by counting
// a test's episodes) and marks its shard itself (Job.Unmarked).
//
// A stage writes its results through cwm/internal/jsonl, one line per
// finished item (or per result of an item), so that a crash, even kill -9,
// loses only the items in flight; the next run's Resume skips every item
// whose line is there.
package batch

import (
	"context"
	"sync"

	"cwm/internal/progress"
)

// Admission is what Options.Admit decides about the next item.
type Admission int

const (
	// Take hands the item to a worker now.
	Take Admission = iota
	// Skip drops the item and goes on with the next one.
	Skip
	// Hold keeps the item back until a running item is done, then asks
	// again; when nothing is running, the run hands out nothing more.
	Hold
	// Stop hands out nothing more; the running items finish.
	Stop
)

// Options configure Run.
type Options[T any] struct {
	// Workers is how many items run at once (default 1). Each worker has
	// an index in [0, Workers), passed to do, for state it owns (a
	// sandbox, a connection).
	Workers int
	// Progress, when set, counts each item done accepts.
	Progress *progress.Bar
	// InOrder hands results to done in the order the items were taken,
	// rather than as they finish.
	InOrder bool
	// Admit, when set, decides about each item before it is taken: a
	// stage's caps (so many per function, so many in all) live there. It
	// is called on Run's goroutine, never at the same time as done, so it
	// may read what done counts.
	Admit func(item T, running int) Admission
}

// Run calls do for each item, at most opts.Workers at once, and hands
// each outcome to done, one at a time on the calling goroutine, which is
// where a stage writes its output and counts.
//
// An error do returns goes to done, which decides: return it to end the
// run, or record it and return nil to go on. When done returns an error,
// Run takes no more items, cancels the context of the running ones, drops
// their outcomes, and returns the error once they have returned. When ctx
// is cancelled, Run takes no more items, hands the running ones' outcomes
// to done (their context is cancelled too, so a stage can tell them from
// finished work), and returns ctx's error.
func Run[T, R any](ctx context.Context, items []T, opts Options[T],
	do func(ctx context.Context, worker int, item T) (R, error),
	done func(item T, res R, err error) error) error {
	workers := min(max(opts.Workers, 1), len(items))
	if workers == 0 {
		return ctx.Err()
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	type job struct {
		seq  int
		item T
	}
	type outcome struct {
		seq  int
		item T
		res  R
		err  error
	}
	jobs := make(chan job)
	outcomes := make(chan outcome)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			// Ends when jobs is closed, after the last outcome is taken.
			for j := range jobs {
				res, err := do(runCtx, w, j.item)
				outcomes <- outcome{j.seq, j.item, res, err}
			}
		})
	}
	defer func() {
		close(jobs)
		wg.Wait()
	}()

	var failed error
	accept := func(o outcome) {
		if failed != nil {
			return
		}
		if err := done(o.item, o.res, o.err); err != nil {
			failed = err
			cancel()
			return
		}
		if ctx.Err() == nil {
			opts.Progress.Add(1)
		}
	}
	held := map[int]outcome{} // InOrder: outcomes waiting for an earlier one
	emit := 0                 // InOrder: the next seq to hand to done
	next, seq, running := 0, 0, 0
	stopped := false
	for {
		// Hand out items while a worker is free. One is, whenever fewer
		// than workers items are running, so the send does not block.
		for !stopped && failed == nil && ctx.Err() == nil && running < workers && next < len(items) {
			a := Take
			if opts.Admit != nil {
				a = opts.Admit(items[next], running)
			}
			if a == Skip {
				next++
				continue
			}
			if a == Stop {
				stopped = true
			}
			if a != Take {
				break
			}
			jobs <- job{seq, items[next]}
			next++
			seq++
			running++
		}
		if running == 0 {
			break
		}
		o := <-outcomes
		running--
		if !opts.InOrder {
			accept(o)
			continue
		}
		held[o.seq] = o
		for {
			h, ok := held[emit]
			if !ok {
				break
			}
			delete(held, emit)
			emit++
			accept(h)
		}
	}
	if failed != nil {
		return failed
	}
	return ctx.Err()
}
