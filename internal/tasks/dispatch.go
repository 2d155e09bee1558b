package tasks

import (
	"context"
	"fmt"

	"cwm/internal/batch"
	"cwm/internal/jsonl"
	"cwm/internal/progress"
	"cwm/internal/sandbox"
	"cwm/internal/task"
)

// result is what validating a candidate decided, and the task when it
// was verified.
type result struct {
	c *candidate
	d decision
	t *task.Task
}

// dispatch validates the queue, one worker per sandbox, until Max tasks
// exist. A candidate whose function already has PerFunction tasks
// (written or in flight) waits or is skipped, so the cap holds exactly.
// The first error stops the handing out of candidates; those running
// finish and are recorded.
func (r *mutateRun) dispatch(ctx context.Context, boxes []*sandbox.Sandbox, queue []*candidate, perFn map[string]int) error {
	out, err := jsonl.Append(r.opts.Out)
	if err != nil {
		return fmt.Errorf("open %s: %w", r.opts.Out, err)
	}
	defer out.Close()
	dec, err := jsonl.Append(decisionsPath(r.opts.Out))
	if err != nil {
		return fmt.Errorf("open decisions: %w", err)
	}
	defer dec.Close()

	total := len(queue)
	if r.opts.Max > 0 {
		total = max(0, r.opts.Max-r.summary.Existing)
	}
	// The bar counts tasks written against Max, or candidates decided
	// without one: record draws it.
	var bar *progress.Bar // nil draws nothing
	if r.opts.Progress != nil {
		bar = progress.New(r.opts.Progress, "tasks mutate", total)
	}
	defer bar.Done()

	workers := make([]*worker, len(boxes))
	for i, sb := range boxes {
		workers[i] = &worker{r: r, sb: sb}
	}
	have := r.summary.Existing
	inflight := map[string]int{}
	capped := r.opts.PerFunction > 0
	var firstErr error
	err = batch.Run(ctx, queue, batch.Options[*candidate]{Workers: len(boxes),
		Admit: func(c *candidate, running int) batch.Admission {
			switch {
			case firstErr != nil:
				return batch.Stop
			case capped && perFn[c.fn] >= r.opts.PerFunction:
				return batch.Skip // can no longer become a task
			case r.opts.Max > 0 && have+running >= r.opts.Max:
				return batch.Hold // enough may be in flight
			case capped && perFn[c.fn]+inflight[c.fn] >= r.opts.PerFunction:
				return batch.Hold
			}
			inflight[c.fn]++
			return batch.Take
		}},
		func(ctx context.Context, w int, c *candidate) (result, error) {
			d, t, err := workers[w].validate(ctx, c)
			return result{c, d, t}, err
		},
		func(c *candidate, res result, err error) error {
			inflight[c.fn]--
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("validate %s (%s): %w", c.m.Desc, c.m.File, err)
				}
				return nil
			}
			if err := r.record(res, out, dec, bar); err != nil && firstErr == nil {
				firstErr = err
			}
			if res.t != nil {
				have++
				perFn[c.fn]++
			}
			return nil
		})
	if err != nil {
		return err
	}
	return firstErr
}

// record writes a decision (and the task first, so that a crash between
// the two leaves a task the resume logic still sees).
func (r *mutateRun) record(res result, out, dec *jsonl.Writer, bar *progress.Bar) error {
	fc := r.summary.Families[res.c.m.Family]
	fc.Tried++
	if res.t != nil {
		if err := out.Write(res.t); err != nil {
			return fmt.Errorf("write task: %w", err)
		}
		fc.Verified++
		r.summary.Written++
	} else {
		r.summary.Rejected[res.d.Kind]++
	}
	if err := dec.Write(res.d); err != nil {
		return fmt.Errorf("write decision: %w", err)
	}
	bar.Count(res.d.Kind)
	if r.opts.Max == 0 || res.t != nil {
		bar.Add(1)
	}
	return nil
}
