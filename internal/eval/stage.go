package eval

import (
	"context"
	"fmt"
	"io"
	"time"

	"cwm/internal/batch"
	"cwm/internal/jsonl"
	"cwm/internal/model"
	"cwm/internal/progress"
	"cwm/internal/shard"
)

// stage is one eval's batch run: its items, how each becomes an output
// line, and where the lines go. Every eval runs on it: resumed from the
// output, sharded, concurrency-bounded, with a progress bar; a model
// server failing an item after its retries is counted and reported, not
// written, so that the next run retries it.
type stage[T, L any] struct {
	label       string
	items       []T
	key         func(T) string
	lineKey     func([]byte) (string, error)
	out         string
	shard       shard.Shard
	concurrency int
	progress    io.Writer
	do          func(context.Context, T) (L, error)
	// outcome names a written line on the progress bar.
	outcome      func(L) string
	onModelError func(T, error)
}

// stageRun is what a stage did: the keys of the shard's items (what the
// summary covers), how many an earlier run had done, how many the model
// server failed, and the time taken.
type stageRun struct {
	want        map[string]bool
	resumed     int
	modelErrors int
	seconds     float64
}

func runStage[T, L any](ctx context.Context, s stage[T, L]) (stageRun, error) {
	var run stageRun
	plan, err := batch.Resume(batch.Spec[T]{Items: s.items, Key: s.key, Out: s.out, OutKey: s.lineKey,
		Shard: s.shard, Order: batch.UnfinishedLast})
	if err != nil {
		return run, err
	}
	w, err := jsonl.Append(s.out)
	if err != nil {
		return run, err
	}
	defer w.Close()
	var bar *progress.Bar
	if s.progress != nil {
		bar = progress.New(s.progress, s.label, len(plan.Todo))
	}
	tally := batch.NewTally(bar)
	start := time.Now()
	runErr := batch.Run(ctx, plan.Todo, batch.Options[T]{Workers: s.concurrency, Progress: bar},
		func(ctx context.Context, _ int, it T) (L, error) { return s.do(ctx, it) },
		func(it T, l L, err error) error {
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				var merr *model.ModelError
				if !asModelError(err, &merr) {
					return err
				}
				run.modelErrors++
				tally.Count("model_error")
				if s.onModelError != nil {
					s.onModelError(it, err)
				}
				return nil
			}
			if err := w.Write(l); err != nil {
				return fmt.Errorf("write %s: %w", s.out, err)
			}
			tally.Count(s.outcome(l))
			return nil
		})
	bar.Done()
	if err := w.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return run, runErr
	}
	run.want = map[string]bool{}
	for _, it := range plan.Mine {
		run.want[s.key(it)] = true
	}
	run.resumed, run.seconds = plan.Resumed(), time.Since(start).Seconds()
	return run, nil
}
