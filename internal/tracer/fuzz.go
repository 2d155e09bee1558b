package tracer

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"

	"cwm/internal/trace"
)

// FuzzOptions configure Fuzz.
type FuzzOptions struct {
	// N is how many new inputs to keep at most.
	N int
	// Seed makes the run reproducible: the same seed, function and pool
	// options give the same kept inputs.
	Seed int64
	// Attempts bounds the mutated inputs traced (default 10*N).
	Attempts int
	// Batch is how many mutations are asked of the worker at once (4).
	Batch int
	// Known are inputs traced before (a model's): their calls are not
	// kept again, their arcs are covered already, and a complete one is
	// mutated as the original is.
	Known []Known
}

// Known is an input traced before fuzzing: its call and its trace.
type Known struct {
	Call   string
	Result *Result
}

// Fuzzed is an input kept by Fuzz.
type Fuzzed struct {
	// Func is the function with the new call; its ID is "<id>/fuzz-<k>".
	Func Func
	// Input is the argument text of the call.
	Input  string
	Result Result
	// NewArcs is how many arcs this input reached first.
	NewArcs int
}

// Fuzz looks for inputs of f that reach lines or branches its known inputs
// do not: it mutates the arguments of a known call (type-preserving, see
// mutate.py), traces the result, and keeps it if its trace has an arc (a
// transition between two lines of the same frame, or to a return or an
// exception) not seen before. orig is the trace of f itself. Only complete
// traces (ok or exception) are kept. emit is called for each kept input in
// order; an error from emit stops Fuzz. A call whose arguments are not
// literals cannot be mutated: Fuzz then returns ErrNotMutable.
func (p *Pool) Fuzz(ctx context.Context, f Func, orig Result, opts FuzzOptions, emit func(Fuzzed) error) error {
	if opts.N <= 0 {
		return nil
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 10 * opts.N
	}
	if opts.Batch <= 0 {
		opts.Batch = 4
	}
	h := fnv.New64a()
	h.Write([]byte(f.ID))
	rng := rand.New(rand.NewPCG(uint64(opts.Seed), h.Sum64()))
	cov := arcs(&orig)
	corpus := []string{f.Call}
	seen := map[string]bool{f.Call: true}
	for _, k := range opts.Known {
		seen[k.Call] = true
		if k.Result.Status.Complete() {
			corpus = append(corpus, k.Call)
			for a := range arcs(k.Result) {
				cov[a] = true
			}
		}
	}
	kept := 0
	for tried := 0; tried < opts.Attempts && kept < opts.N; {
		if err := ctx.Err(); err != nil {
			return err
		}
		muts, err := p.Mutate(ctx, f.Code, corpus[rng.IntN(len(corpus))], rng.Int64(), opts.Batch)
		if err != nil {
			return err
		}
		tried++ // a batch with nothing new still counts, so Fuzz always ends
		for _, m := range muts {
			if seen[m.Call] || kept >= opts.N {
				continue
			}
			seen[m.Call] = true
			tried++
			cand := Func{ID: fmt.Sprintf("%s/fuzz-%d", f.ID, kept+1), Code: f.Code, Call: m.Call}
			// A candidate whose recording stops at a cap cannot be kept:
			// it ends there instead of running on until the wall clock.
			res := p.trace(ctx, cand, true)
			if !res.Status.Complete() {
				continue
			}
			n := 0
			for a := range arcs(&res) {
				if !cov[a] {
					cov[a] = true
					n++
				}
			}
			if n == 0 {
				continue
			}
			kept++
			corpus = append(corpus, m.Call)
			if err := emit(Fuzzed{Func: cand, Input: m.Input, Result: res, NewArcs: n}); err != nil {
				return err
			}
		}
	}
	return nil
}

// arc is a transition within one frame of a code object: from a line
// (0: the call) to a line, or to arcReturn or arcException.
type arc struct {
	code     Code
	from, to int
}

const (
	arcReturn    = -1
	arcException = -2
)

// arcs returns the arcs a trace went through.
func arcs(r *Result) map[arc]bool {
	out := map[arc]bool{}
	type open struct{ code, last int }
	var stack []open
	code := func(i int) Code {
		if i >= 0 && i < len(r.Codes) {
			return r.Codes[i]
		}
		return Code{}
	}
	for _, f := range r.Frames {
		switch f.Event {
		case trace.Call:
			stack = append(stack, open{f.Code, 0})
			continue
		}
		if len(stack) == 0 {
			continue
		}
		top := &stack[len(stack)-1]
		switch f.Event {
		case trace.Line:
			out[arc{code(top.code), top.last, f.Lineno}] = true
			top.last = f.Lineno
		case trace.Exception:
			out[arc{code(top.code), top.last, arcException}] = true
		case trace.Return:
			out[arc{code(top.code), top.last, arcReturn}] = true
			stack = stack[:len(stack)-1]
		}
	}
	return out
}
