package tasks

import (
	"context"
	"fmt"
	"sync"

	"cwm/internal/jsonl"
	"cwm/internal/progress"
	"cwm/internal/sandbox"
	"cwm/internal/task"
)

type result struct {
	c   *candidate
	d   decision
	t   *task.Task
	err error
}

// dispatch validates the queue with one worker per sandbox until Max
// tasks exist. A candidate whose function already has PerFunction tasks
// (written or in flight) waits or is skipped, so the cap holds exactly.
func (r *mutateRun) dispatch(ctx context.Context, sbs []*sandbox.Sandbox, queue []*candidate, perFn map[string]int) error {
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
	var bar *progress.Bar // nil draws nothing
	if r.opts.Progress != nil {
		bar = progress.New(r.opts.Progress, "tasks mutate", total)
	}
	defer bar.Done()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan *candidate)
	results := make(chan result)
	var wg sync.WaitGroup
	for _, sb := range sbs {
		w := &worker{r: r, sb: sb}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range jobs {
				d, t, err := w.validate(ctx, c)
				results <- result{c, d, t, err}
			}
		}()
	}
	defer func() {
		close(jobs)
		cancel()
		go func() {
			for range results {
			}
		}()
		wg.Wait()
		close(results)
	}()

	have := r.summary.Existing
	inflight := map[string]int{}
	busy := 0
	var firstErr error
	next := 0
	for {
		// Skip what can no longer become a task.
		for next < len(queue) && r.opts.PerFunction > 0 && perFn[queue[next].fn] >= r.opts.PerFunction {
			next++
		}
		need := r.opts.Max == 0 || have+busy < r.opts.Max
		var send chan *candidate
		var c *candidate
		if firstErr == nil && need && next < len(queue) && busy < len(sbs) {
			c = queue[next]
			if r.opts.PerFunction == 0 || perFn[c.fn]+inflight[c.fn] < r.opts.PerFunction {
				send = jobs
			}
		}
		if send == nil && busy == 0 {
			break
		}
		select {
		case send <- c:
			next++
			busy++
			inflight[c.fn]++
		case res := <-results:
			busy--
			inflight[res.c.fn]--
			if res.err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("validate %s (%s): %w", res.c.m.Desc, res.c.m.File, res.err)
				}
				continue
			}
			if err := r.record(res, out, dec, bar); err != nil && firstErr == nil {
				firstErr = err
			}
			if res.t != nil {
				have++
				perFn[res.c.fn]++
			}
		case <-ctx.Done():
			return ctx.Err()
		}
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
