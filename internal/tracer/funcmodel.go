package tracer

import (
	"context"
	"fmt"
	"math"

	"cwm/internal/traceline"
)

// modelShare is how many of a function's --fuzz inputs its model-written
// generator supplies: ModelShare of the budget, rounded.
func (t *funcTracer) modelShare() int {
	if t.opts.InputModel == nil {
		return 0
	}
	return int(math.Round(t.opts.ModelShare * float64(t.opts.Fuzz)))
}

// modelInputs asks the model for f's generator, traces the distinct new
// inputs it gives up to the model's share, each emitted as its own line
// "<id>/model-<k>" as trace func traces a call, and returns them for the
// fuzzer (which keeps none of them again) with how the generator ended.
// The error is the model server failing, or the run's.
func (t *funcTracer) modelInputs(ctx context.Context, f *FuncLine, fn Func, emit func(any, string) error) ([]Known, Generator, error) {
	share := t.modelShare()
	if share <= 0 {
		return nil, Generator{}, nil
	}
	texts, gen, err := t.pool.AskInputs(ctx, t.opts.InputModel, f, share)
	if err != nil {
		return nil, gen, err
	}
	emitted := 0
	entry := entryOf(f)
	seen := map[string]bool{fn.Call: true}
	var known []Known
	for _, text := range texts {
		call := entry + "(" + text + ")"
		if seen[call] {
			continue
		}
		seen[call] = true
		gen.Inputs++
		if len(known) == share {
			continue
		}
		in := Func{ID: fmt.Sprintf("%s/model-%d", f.ID, len(known)+1), Code: f.Code, Call: call}
		res := t.pool.Trace(ctx, in)
		if ctx.Err() != nil {
			return nil, gen, ctx.Err()
		}
		known = append(known, Known{Call: call, Result: &res})
		if t.done[in.ID] {
			continue // written by an earlier, interrupted run
		}
		r := t.record(res, call, text, f.ID)
		r.InputSource = traceline.Model
		if err := emit(r, string(r.Status)); err != nil {
			return nil, gen, err
		}
		emitted++
	}
	gen.Kept = len(known)
	if gen.Status == GenOK && gen.Inputs == 0 {
		gen.Status, gen.Detail = GenDuplicates, "every input it gave is the function's own"
	}
	t.mu.Lock()
	t.modelKept += emitted
	t.gens[gen.Status]++
	t.mu.Unlock()
	return known, gen, nil
}
