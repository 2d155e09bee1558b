package tracer

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"cwm/internal/batch"
	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/model"
	"cwm/internal/sandbox"
	"cwm/internal/shard"
	"cwm/internal/traceline"
)

// FuncLine is one input line of trace func: {"id", "code", "call"}, call
// being the expression to trace, or CruxEval's {"id", "code", "input"},
// input being the argument text of f (or of the function named by
// "entry"). Call and Input are pointers because an empty input is valid
// (a function without arguments: CruxEval's sample_135).
type FuncLine struct {
	ID    string  `json:"id"`
	Code  string  `json:"code"`
	Call  *string `json:"call"`
	Input *string `json:"input"`
	Entry string  `json:"entry"`
}

// CallExpr is the expression the trace's entry point returns.
func (f *FuncLine) CallExpr() string {
	if f.Call != nil {
		return *f.Call
	}
	entry := f.Entry
	if entry == "" {
		entry = "f"
	}
	return entry + "(" + *f.Input + ")"
}

// InputText is the argument text, "" for a line with a call.
func (f *FuncLine) InputText() string {
	if f.Input == nil {
		return ""
	}
	return *f.Input
}

// Record is one output line of trace func: the result and how it was
// called; InputSource says where the input came from, FuzzOf names the
// function a fuzzed or model-written input is of, and Generator, on a
// function's own line, how its model-written generator ended.
type Record struct {
	Result
	Call        string           `json:"call"`
	Input       string           `json:"input"`
	InputSource traceline.Source `json:"input_source"`
	FuzzOf      string           `json:"fuzz_of"`
	Generator   Generator        `json:"generator"`
}

// ReadFuncs reads and checks every line of a functions file before
// anything runs, so that a bad line is reported at once with its number.
// A last line without a newline is a line (CruxEval's file ends so) unless
// it is cut off.
func ReadFuncs(path string) ([]FuncLine, error) {
	var funcs []FuncLine
	seen := map[string]int{}
	err := jsonl.ScanInput(path, func(n int, line []byte) error {
		if len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		f, err := parseFunc(line, seen)
		if err != nil {
			return errkind.Wrap(errkind.Input, err)
		}
		seen[f.ID] = n
		funcs = append(funcs, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(funcs) == 0 {
		return nil, errkind.Errorf(errkind.Input, "%s: no functions", path)
	}
	return funcs, nil
}

// parseFunc decodes one input line and says what is wrong with it.
func parseFunc(line []byte, seen map[string]int) (f FuncLine, err error) {
	if err := jsonl.Unmarshal(line, &f); err != nil {
		return f, err
	}
	switch {
	case f.ID == "":
		return f, errors.New(`no "id"`)
	case f.Code == "":
		return f, fmt.Errorf(`%s: no "code"`, f.ID)
	case (f.Call == nil) == (f.Input == nil):
		return f, fmt.Errorf(`%s: want exactly one of "call" and "input"`, f.ID)
	case f.Call != nil && strings.TrimSpace(*f.Call) == "":
		return f, fmt.Errorf(`%s: empty "call"`, f.ID)
	case seen[f.ID] > 0:
		return f, fmt.Errorf("%s: id already used on line %d", f.ID, seen[f.ID])
	}
	return f, nil
}

// FuncsOptions configure a trace func run.
type FuncsOptions struct {
	// Funcs are the functions to trace (ReadFuncs).
	Funcs []FuncLine
	// Out is the traces file (JSONL), appended to and resumed: functions
	// whose id is in it are skipped. In is the functions' file, which the
	// shard's marker records.
	Out, In string
	// Pool configures the workers; Pool.Workers is capped at the number
	// of functions to trace.
	Pool Options
	// Fuzz is how many more inputs per function coverage-guided mutation
	// and the model's generator may add (0: none); Seed seeds the
	// mutations.
	Fuzz int
	Seed int64
	// InputModel, when set, writes each function an input generator;
	// ModelShare of Fuzz (rounded) comes from it, the fuzzer filling the
	// rest of the budget. ModelConcurrency functions are then in flight
	// at once (at least the pool's workers), so that the workers trace
	// while functions wait for the model.
	InputModel       *model.Client
	ModelShare       float64
	ModelConcurrency int
	// Shard takes the functions whose id falls in it (default all).
	Shard    shard.Shard
	Progress io.Writer
}

// Funcs is a planned trace func run.
type Funcs struct {
	opts FuncsOptions
	plan batch.Plan[FuncLine]
}

// NewFuncs plans a run: the functions of the shard not yet in Out, those
// a killed run left unfinished last (batch.UnfinishedLast).
func NewFuncs(opts FuncsOptions) (*Funcs, error) {
	plan, err := batch.Resume(batch.Spec[FuncLine]{Items: opts.Funcs, Key: func(f FuncLine) string { return f.ID },
		Out: opts.Out, OutKey: FuncStage.LineKey, Shard: opts.Shard, Order: batch.UnfinishedLast})
	if err != nil {
		return nil, err
	}
	return &Funcs{opts: opts, plan: plan}, nil
}

// Total is how many functions the shard has; Todo how many are left.
func (f *Funcs) Total() int { return len(f.plan.Mine) }
func (f *Funcs) Todo() int  { return len(f.plan.Todo) }

// FuncsSummary is what a trace func run wrote.
type FuncsSummary struct {
	// Statuses counts the lines written, by status.
	Statuses map[string]int
	// FuzzKept counts the fuzzed inputs written; FuzzSkipped the
	// functions whose arguments are not literals.
	FuzzKept, FuzzSkipped int
	// ModelKept counts the model-written inputs written; Generators the
	// functions' generators by status; ModelErrors the functions set
	// aside because the model server failed (the next run retries them),
	// the first of which failed with ModelError.
	ModelKept   int
	Generators  map[string]int
	ModelErrors int
	ModelError  error
	// Skipped counts the functions already in Out.
	Skipped int
	Seconds float64

	fuzz, model bool
	out         string
}

// Run traces the functions left to do on a pool of workers in sandboxes
// of rt (nil when Todo is 0), on batch.RunStage, which marks the shard
// when the run got to its end. A function's fuzzed inputs are written
// from its worker as they are kept (Job.Stream), its own line last: when
// it is in Out, so is all its fuzzing, which is what makes skipping its
// id on resume correct. Problems of a function are its line's status; the
// error is for a run that could not go on, and comes with the summary of
// what was written until then.
func (f *Funcs) Run(ctx context.Context, rt *sandbox.Runtime) (*FuncsSummary, error) {
	sum := &FuncsSummary{Skipped: f.plan.Resumed(), fuzz: f.opts.Fuzz > 0, model: f.opts.InputModel != nil, out: f.opts.Out}
	popts := f.opts.Pool
	popts.Workers = min(max(popts.Workers, 1), max(len(f.plan.Todo), 1))
	inFlight := popts.Workers
	if f.opts.InputModel != nil {
		inFlight = max(inFlight, min(f.opts.ModelConcurrency, len(f.plan.Todo)))
	}
	t := &funcTracer{opts: &f.opts, done: f.plan.Done, gens: map[string]int{}}
	defer func() {
		if t.pool != nil {
			t.pool.Close()
		}
	}()
	run, err := batch.RunStage(ctx, batch.Job[FuncLine, Record]{Stage: &FuncStage, Plan: &f.plan,
		Out: f.opts.Out, Shard: f.opts.Shard, Inputs: []string{f.opts.In}, Workers: inFlight,
		Progress: f.opts.Progress, Label: "trace", QuietIdle: true,
		Prepare: func(plan batch.Plan[FuncLine]) error {
			if len(plan.Todo) == 0 {
				return nil
			}
			pool, err := NewPool(ctx, rt, popts)
			if err != nil {
				return fmt.Errorf("start trace workers: %w", err)
			}
			t.pool = pool
			return nil
		},
		Stream: func(ctx context.Context, _ int, fl FuncLine, emit func(any, string) error) (Record, error) {
			return t.one(ctx, fl, emit)
		},
		Outcome: func(r Record) string { return string(r.Status) },
		Aside: func(_ FuncLine, err error) string {
			if !errors.As(err, new(*model.ModelError)) {
				return ""
			}
			t.mu.Lock()
			sum.ModelError = cmp.Or(sum.ModelError, err)
			t.mu.Unlock()
			return "model_error"
		}})
	sum.Statuses = run.Tally.Counts()
	sum.FuzzKept, sum.FuzzSkipped = t.fuzzKept, t.fuzzSkip
	sum.ModelKept, sum.Generators, sum.ModelErrors = t.modelKept, t.gens, run.SetAside
	sum.Seconds = run.Seconds
	return sum, err
}

// funcTracer traces functions, on every worker.
type funcTracer struct {
	pool *Pool // started once the plan has functions to trace
	opts *FuncsOptions
	done map[string]bool // ids already in the output (read-only)

	mu        sync.Mutex
	fuzzKept  int            // guarded by mu
	fuzzSkip  int            // guarded by mu: functions whose arguments could not be mutated
	modelKept int            // guarded by mu
	gens      map[string]int // guarded by mu: generators by status
}

// one traces a function and emits its fuzzed inputs' lines; its own line
// is the result.
func (t *funcTracer) one(ctx context.Context, f FuncLine, emit func(any, string) error) (Record, error) {
	fn := Func{ID: f.ID, Code: f.Code, Call: f.CallExpr()}
	res := t.pool.Trace(ctx, fn)
	if ctx.Err() != nil {
		return Record{}, ctx.Err()
	}
	known, gen, err := t.modelInputs(ctx, &f, fn, emit)
	if err != nil {
		return Record{}, err
	}
	if n := t.opts.Fuzz - gen.Kept; n > 0 && res.Status.Complete() {
		err := t.pool.Fuzz(ctx, fn, res, FuzzOptions{N: n, Seed: t.opts.Seed, Known: known}, func(z Fuzzed) error {
			if t.done[z.Func.ID] {
				return nil // written by an earlier, interrupted run
			}
			t.mu.Lock()
			t.fuzzKept++
			t.mu.Unlock()
			r := t.record(z.Result, z.Func.Call, z.Input, f.ID)
			r.InputSource = traceline.Fuzz
			return emit(r, string(r.Status))
		})
		switch {
		case errors.Is(err, ErrNotMutable):
			t.mu.Lock()
			t.fuzzSkip++
			t.mu.Unlock()
		case err != nil:
			return Record{}, err
		}
	}
	r := t.record(res, fn.Call, f.InputText(), "")
	r.InputSource, r.Generator = traceline.Given, gen
	return r, nil
}

// record is the output line of a result. A complete trace holds the call
// in its text, within MaxBytes; an incomplete one echoes only the first
// MaxRepr characters of the call and input, so that its line stays small
// however large the arguments.
func (t *funcTracer) record(res Result, call, input, fuzzOf string) Record {
	if !res.Status.Complete() {
		maxRepr := t.pool.Options().MaxRepr
		call, input = Truncate(call, maxRepr), Truncate(input, maxRepr)
	}
	return Record{Result: res, Call: call, Input: input, FuzzOf: fuzzOf}
}

// Write prints the summary for people.
func (s *FuncsSummary) Write(w io.Writer) {
	total := 0
	for _, n := range s.Statuses {
		total += n
	}
	fmt.Fprintf(w, "traced %d in %.1fs (%.0f/s): %s\n", total, s.Seconds, float64(total)/s.Seconds, batch.FormatCounts(s.Statuses))
	if s.model {
		fmt.Fprintf(w, "the model's generators gave %d new inputs; generators: %s\n", s.ModelKept, batch.FormatCounts(s.Generators))
	}
	if s.fuzz {
		fmt.Fprintf(w, "fuzzing kept %d new inputs; %d functions had arguments that are not literals\n", s.FuzzKept, s.FuzzSkipped)
	}
	if s.Skipped > 0 {
		fmt.Fprintf(w, "skipped %d functions already in %s\n", s.Skipped, s.out)
	}
}
