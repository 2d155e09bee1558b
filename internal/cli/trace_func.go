package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"cwm/internal/command"
	"cwm/internal/jsonl"
	"cwm/internal/progress"
	"cwm/internal/sandbox"
	"cwm/internal/tracer"
)

type traceFuncCmd struct {
	in, out   string
	workers   int
	timeout   time.Duration
	maxEvents int
	maxBytes  command.ByteSize
	maxRepr   int
	memory    command.ByteSize
	fuzz      int
	seed      int64
	fresh     bool
}

func (*traceFuncCmd) Name() string { return "trace func" }
func (*traceFuncCmd) Synopsis() string {
	return "trace Python functions in CWM's trace format"
}
func (*traceFuncCmd) Usage() string {
	return `--in FUNCS.jsonl --out TRACES.jsonl [flags]
Traces each function of FUNCS.jsonl in a sandboxed Python 3.11 and appends
one line per trace to TRACES.jsonl (see docs/traces.md for both formats).

An input line is {"id", "code", "call"}, call being the expression to trace,
e.g. "f(1, 3)", or CruxEval's {"id", "code", "input"}, input being the
argument text of f (or of the function named by "entry"). Other fields are
ignored, so the CruxEval file is valid input as it is.

The context of a trace is the code followed by
    def main(): # << START_OF_TRACE
        return CALL
and the trace starts at main. An output line has the id, status (ok,
exception, timeout, too_long, memory, error), context, frames, text (the
complete CWM text, for ok and exception), output (what main returned or
raised), error (why, when not ok), and stats.

With --fuzz N, up to N more inputs per function are made by type-preserving
mutation of its arguments, and kept when they reach lines or branches the
earlier inputs did not; each is its own line, with id "<id>/fuzz-<k>".
The same --seed gives the same inputs.

The run is resumable: ids already in TRACES.jsonl are skipped.

Examples:
  cwm trace func --in cruxeval.jsonl --out traces.jsonl
  cwm trace func --in funcs.jsonl --out traces.jsonl --fuzz 8 --seed 1`
}

func (c *traceFuncCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.in, "in", "", "input `FILE` of functions (JSON lines)")
	fs.StringVar(&c.out, "out", "", "output `FILE` of traces (JSON lines, appended)")
	fs.IntVar(&c.workers, "workers", runtime.NumCPU(), "worker processes, each in its own sandbox")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Second, "wall-clock limit per function")
	fs.IntVar(&c.maxEvents, "max-events", tracer.TraceCaps.MaxEvents, "line events per trace before it is cut (status too_long)")
	c.maxBytes = command.ByteSize(tracer.TraceCaps.MaxBytes)
	fs.Var(&c.maxBytes, "max-bytes", "trace text `BYTES` before it is cut (status too_long)")
	fs.IntVar(&c.maxRepr, "max-repr", tracer.TraceCaps.MaxRepr, "characters of one value's text before it is truncated")
	c.memory = 1 << 30
	fs.Var(&c.memory, "memory", "address space of the traced program in `BYTES`")
	fs.IntVar(&c.fuzz, "fuzz", 0, "up to `N` more inputs per function by coverage-guided mutation")
	fs.Int64Var(&c.seed, "seed", 0, "seed of the mutations")
	fs.BoolVar(&c.fresh, "fresh", false, "fork a fresh process for every function (strict isolation, much slower)")
}

// funcLine is one input line. Call and Input are pointers because an empty
// input is valid (a function without arguments: CruxEval's sample_135).
type funcLine struct {
	ID    string  `json:"id"`
	Code  string  `json:"code"`
	Call  *string `json:"call"`
	Input *string `json:"input"`
	Entry string  `json:"entry"`
}

func (f *funcLine) call() string {
	if f.Call != nil {
		return *f.Call
	}
	entry := f.Entry
	if entry == "" {
		entry = "f"
	}
	return entry + "(" + *f.Input + ")"
}

func (f *funcLine) input() string {
	if f.Input == nil {
		return ""
	}
	return *f.Input
}

// traceRecord is one output line: the result and how it was called.
type traceRecord struct {
	tracer.Result
	Call   string `json:"call"`
	Input  string `json:"input"`
	FuzzOf string `json:"fuzz_of"`
}

func (c *traceFuncCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	switch {
	case len(args) > 0:
		return command.Usagef("unexpected arguments %q", args)
	case c.in == "" || c.out == "":
		return command.Usagef("--in and --out are required")
	case c.workers <= 0 || c.timeout <= 0 || c.maxEvents <= 0 || c.maxBytes <= 0 || c.maxRepr < 64 || c.fuzz < 0:
		return command.Usagef("--workers, --timeout, --max-events, --max-bytes must be positive, --max-repr at least 64, --fuzz not negative")
	}
	funcs, err := readFuncs(c.in)
	if err != nil {
		return err
	}
	done, err := jsonl.Keys(c.out, jsonl.Field("id"))
	if err != nil {
		return fmt.Errorf("cannot resume: %w", err)
	}
	todo := resumeOrder(funcs, done)
	if len(todo) == 0 {
		fmt.Fprintf(e.Stderr, "cwm trace func: all %d functions of %s are already in %s\n", len(funcs), c.in, c.out)
		return nil
	}
	w, err := jsonl.Append(c.out)
	if err != nil {
		return err
	}
	defer w.Close()
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: e.Home, Log: e.Log, Warm: -1})
	if err != nil {
		return err
	}
	defer rt.Close()
	recycle := 0
	if c.fresh {
		recycle = 1
	}
	pool, err := tracer.NewPool(ctx, rt, tracer.Options{Workers: min(c.workers, len(todo)), Timeout: c.timeout,
		Caps: tracer.Caps{MaxEvents: c.maxEvents, MaxBytes: int(c.maxBytes), MaxRepr: c.maxRepr}, Memory: int64(c.memory),
		Recycle: recycle, Log: e.Log})
	if err != nil {
		return fmt.Errorf("start trace workers: %w", err)
	}
	defer pool.Close()

	s := &traceRun{cmd: c, pool: pool, w: w, done: done, counts: map[string]int{},
		bar: progress.New(e.Stderr, "trace", len(todo))}
	start := time.Now()
	err = s.all(ctx, todo)
	s.bar.Done()
	s.summary(e.Stderr, len(funcs)-len(todo), time.Since(start))
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("interrupted; run the same command again to resume: %w", ctx.Err())
	}
	return err
}

// readFuncs reads and checks every input line before anything runs, so a
// bad line is reported at once with its number. A last line without a
// newline is a line (CruxEval's file ends so) unless it is cut off.
func readFuncs(path string) ([]funcLine, error) {
	var funcs []funcLine
	seen := map[string]int{}
	err := jsonl.ScanInput(path, func(n int, line []byte) error {
		if len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		f, err := parseFunc(line, seen)
		if err != nil {
			return err
		}
		seen[f.ID] = n
		funcs = append(funcs, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(funcs) == 0 {
		return nil, fmt.Errorf("%s: no functions", path)
	}
	return funcs, nil
}

// resumeOrder returns the functions not yet in the output, those an
// earlier run left unfinished last. Functions are handed to the workers
// in input order, so those before the last one finished were in flight
// when that run was killed, and they are the slowest (a kill most likely
// lands in a long function); redone first, they would hold every worker
// again before anything new is written, and under repeated kills the run
// would never get past them.
func resumeOrder(funcs []funcLine, done map[string]bool) []funcLine {
	last := -1
	for i, f := range funcs {
		if done[f.ID] {
			last = i
		}
	}
	var fresh, unfinished []funcLine
	for i, f := range funcs {
		switch {
		case done[f.ID]:
		case i < last:
			unfinished = append(unfinished, f)
		default:
			fresh = append(fresh, f)
		}
	}
	return append(fresh, unfinished...)
}

// parseFunc decodes one input line and says what is wrong with it.
func parseFunc(line []byte, seen map[string]int) (f funcLine, err error) {
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

// traceRun is one run of the command over its functions.
type traceRun struct {
	cmd  *traceFuncCmd
	pool *tracer.Pool
	w    *jsonl.Writer
	done map[string]bool // ids already in the output (read-only)
	bar  *progress.Bar

	mu       sync.Mutex
	counts   map[string]int // records written, per status
	fuzzKept int
	fuzzSkip int // functions whose arguments could not be mutated
}

func (s *traceRun) all(ctx context.Context, todo []funcLine) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan funcLine)
	errs := make(chan error, s.pool.Options().Workers)
	var wg sync.WaitGroup
	for range s.pool.Options().Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range next {
				if err := s.one(ctx, f); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
feed:
	for _, f := range todo {
		select {
		case next <- f:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return ctx.Err()
	}
}

// one traces a function and its fuzzed inputs. The function's own line is
// written last: when it is in the output, so is all its fuzzing, which is
// what makes skipping its id on resume correct.
func (s *traceRun) one(ctx context.Context, f funcLine) error {
	fn := tracer.Func{ID: f.ID, Code: f.Code, Call: f.call()}
	res := s.pool.Trace(ctx, fn)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if s.cmd.fuzz > 0 && res.Status.Complete() {
		err := s.pool.Fuzz(ctx, fn, res, tracer.FuzzOptions{N: s.cmd.fuzz, Seed: s.cmd.seed}, func(z tracer.Fuzzed) error {
			if s.done[z.Func.ID] {
				return nil // written by an earlier, interrupted run
			}
			s.mu.Lock()
			s.fuzzKept++
			s.mu.Unlock()
			return s.write(s.record(z.Result, z.Func.Call, z.Input, f.ID))
		})
		switch {
		case errors.Is(err, tracer.ErrNotMutable):
			s.mu.Lock()
			s.fuzzSkip++
			s.mu.Unlock()
		case err != nil:
			return err
		}
	}
	if err := s.write(s.record(res, fn.Call, f.input(), "")); err != nil {
		return err
	}
	s.bar.Add(1)
	return nil
}

// record is the output line of a result. A complete trace holds the call
// in its text, within --max-bytes; an incomplete one echoes only the first
// --max-repr characters of the call and input, so that its line stays
// small however large the arguments.
func (s *traceRun) record(res tracer.Result, call, input, fuzzOf string) traceRecord {
	if !res.Status.Complete() {
		call, input = tracer.Truncate(call, s.cmd.maxRepr), tracer.Truncate(input, s.cmd.maxRepr)
	}
	return traceRecord{Result: res, Call: call, Input: input, FuzzOf: fuzzOf}
}

func (s *traceRun) write(r traceRecord) error {
	if err := s.w.Write(r); err != nil {
		return fmt.Errorf("write %s: %w", s.cmd.out, err)
	}
	s.mu.Lock()
	s.counts[string(r.Status)]++
	s.mu.Unlock()
	s.bar.Count(string(r.Status))
	return nil
}

func (s *traceRun) summary(w io.Writer, skipped int, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := 0
	var parts []string
	for st, n := range s.counts {
		total += n
		parts = append(parts, fmt.Sprintf("%s %d", st, n))
	}
	sort.Strings(parts)
	fmt.Fprintf(w, "traced %d in %.1fs (%.0f/s): %s\n", total, d.Seconds(), float64(total)/d.Seconds(), strings.Join(parts, ", "))
	if s.cmd.fuzz > 0 {
		fmt.Fprintf(w, "fuzzing kept %d new inputs; %d functions had arguments that are not literals\n", s.fuzzKept, s.fuzzSkip)
	}
	if skipped > 0 {
		fmt.Fprintf(w, "skipped %d functions already in %s\n", skipped, s.cmd.out)
	}
}
