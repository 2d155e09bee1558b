package tasks

import (
	"context"
	"fmt"

	"cwm/internal/batch"
	"cwm/internal/jsonl"
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
// finish and are recorded (the stage's Drain).
func (r *mutateRun) dispatch(ctx context.Context, boxes []*sandbox.Sandbox, queue []*candidate, perFn map[string]int) error {
	dec, err := jsonl.Append(decisionsPath(r.opts.Out))
	if err != nil {
		return fmt.Errorf("open decisions: %w", err)
	}
	defer dec.Close()

	workers := make([]*worker, len(boxes))
	for i, sb := range boxes {
		workers[i] = &worker{r: r, sb: sb}
	}
	have := r.summary.Existing
	inflight := map[string]int{}
	capped := r.opts.PerFunction > 0
	// The queue is resumed from the decisions and the tasks (r.resume);
	// the marker counts every candidate decided, by this run or earlier.
	plan := batch.Plan[*candidate]{Mine: queue, Todo: queue}
	_, err = batch.RunStage(ctx, batch.Job[*candidate, result]{Stage: &MutateStage, Plan: &plan,
		Out: r.opts.Out, Shard: r.opts.Shard, Workers: len(boxes), Drain: true,
		Progress: r.opts.Progress, Label: "tasks mutate",
		// The bar counts tasks written against Max, or candidates
		// decided without one.
		Total: func(batch.Plan[*candidate]) int {
			if r.opts.Max > 0 {
				return max(0, r.opts.Max-r.summary.Existing)
			}
			return len(queue)
		},
		Advance: func(res result) bool { return r.opts.Max == 0 || res.t != nil },
		Admit: func(c *candidate, running int) batch.Admission {
			switch {
			case capped && perFn[c.fn] >= r.opts.PerFunction:
				return batch.Skip // can no longer become a task
			case r.opts.Max > 0 && have+running >= r.opts.Max:
				return batch.Hold // enough may be in flight
			case capped && perFn[c.fn]+inflight[c.fn] >= r.opts.PerFunction:
				return batch.Hold
			}
			inflight[c.fn]++
			return batch.Take
		},
		Do: func(ctx context.Context, w int, c *candidate) (result, error) {
			d, t, err := workers[w].validate(ctx, c)
			return result{c, d, t}, err
		},
		Write: func(out *jsonl.Writer, c *candidate, res result, err error) (string, error) {
			inflight[c.fn]--
			if err != nil {
				return "", fmt.Errorf("validate %s (%s): %w", c.m.Desc, c.m.File, err)
			}
			err = r.record(res, out, dec)
			if res.t != nil {
				have++
				perFn[c.fn]++
			}
			return res.d.Kind, err
		},
		Finished: func(batch.Plan[*candidate]) int {
			decided := r.summary.Resumed
			for _, f := range r.summary.Families {
				decided += f.Tried
			}
			return decided
		},
	})
	return err
}

// record writes a decision (and the task first, so that a crash between
// the two leaves a task the resume logic still sees).
func (r *mutateRun) record(res result, out, dec *jsonl.Writer) error {
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
	return nil
}
