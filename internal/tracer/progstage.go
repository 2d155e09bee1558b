package tracer

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"cwm/internal/batch"
	"cwm/internal/jsonl"
	"cwm/internal/sandbox"
	"cwm/internal/shard"
)

// ProgStage is cwm trace prog as a batch stage: a line per run of a
// solution on a test, or per problem with nothing to run.
var ProgStage = batch.Stage{Name: "trace prog", LineKey: jsonl.Field("id")}

// ProgRecord is one output line of trace prog: the trace (Result: id,
// status, context, frames, text, output, stdout, ...) and the judgement
// of the run. Every field is always written, as in Record.
type ProgRecord struct {
	Result
	Name     string `json:"name"`
	Solution int    `json:"solution"`
	TestKind string `json:"test_kind"`
	Test     int    `json:"test"`
	// Expected is the test's output (its first MaxRepr characters).
	Expected string `json:"expected"`
	// Correct is whether the program ended well and printed the expected
	// output (OutputsMatch).
	Correct bool `json:"correct"`
	// Verdict is how the run went (see the Verdict constants), Reason why
	// when it is not passed.
	Verdict string `json:"result"`
	Reason  string `json:"reason"`
	ProgEnd
}

// The verdicts of a run, and of a problem with nothing to run.
const (
	VerdictPassed      = "passed"        // ended, printed the expected output
	VerdictWrong       = "wrong_answer"  // ended, printed something else
	VerdictEOF         = "eof"           // read past the end of its input: EOFError
	VerdictRuntime     = "runtime_error" // another exception, or a SystemExit with a non-zero code
	VerdictOutputLimit = "output_limit"  // printed more than the stdout cap
	VerdictTimeout     = "timeout"
	VerdictMemory      = "memory"
	VerdictError       = "error"     // does not compile, or the tracer could not run it
	VerdictNoPython    = "no_python" // a problem without a Python 3 solution
	VerdictNoTests     = "no_tests"  // a problem without a test of the kinds chosen
)

// ProgOptions configure a trace prog run.
type ProgOptions struct {
	Runs []ProgRun
	// Out is the output (JSONL, appended, resumed by id); In the input,
	// which the shard's marker records.
	Out, In string
	// Pool configures the workers; its MaxCapture is the stdout cap.
	Pool Options
	// Max stops the run once the output holds Max lines (0: no limit).
	Max      int
	Shard    shard.Shard
	Progress io.Writer
}

// ProgSummary is what a trace prog run wrote.
type ProgSummary struct {
	// Verdicts and Statuses count the lines written by verdict and by
	// trace status; Correct the runs that passed.
	Verdicts map[string]int `json:"verdicts"`
	Statuses map[string]int `json:"statuses"`
	// Kept counts the complete traces written, Dropped the runs whose
	// trace CWM's drop rules (or a timeout, an error) left out.
	Kept    int `json:"kept"`
	Dropped int `json:"dropped"`
	// Skipped counts the lines already in Out; Stopped is set when Max
	// stopped the run.
	Skipped int     `json:"skipped"`
	Stopped bool    `json:"stopped_at_max"`
	Seconds float64 `json:"seconds"`
}

// TraceProgs runs the runs of the shard not yet in Out on a pool of
// workers in sandboxes of rt (nil when nothing is left to do), on
// batch.RunStage.
func TraceProgs(ctx context.Context, rt *sandbox.Runtime, opts ProgOptions) (*ProgSummary, error) {
	var pool *Pool
	defer func() {
		if pool != nil {
			pool.Close()
		}
	}()
	return runProgs(ctx, opts, func(workers int) (*Pool, error) {
		popts := opts.Pool
		popts.Workers = workers
		var err error
		pool, err = NewPool(ctx, rt, popts)
		return pool, err
	})
}

// runProgs is TraceProgs on the pool newPool starts for the workers the
// plan needs, once it knows there is something to do.
func runProgs(ctx context.Context, opts ProgOptions, newPool func(workers int) (*Pool, error)) (*ProgSummary, error) {
	sum := &ProgSummary{Verdicts: map[string]int{}, Statuses: map[string]int{}}
	plan, err := batch.Resume(batch.Spec[ProgRun]{Items: opts.Runs, Key: ProgRun.ID, Out: opts.Out,
		OutKey: ProgStage.LineKey, Shard: opts.Shard, Order: batch.UnfinishedLast})
	if err != nil {
		return nil, err
	}
	sum.Skipped = plan.Resumed()
	workers := min(max(opts.Pool.Workers, 1), max(len(plan.Todo), 1))
	written := len(plan.Done)
	var pool *Pool
	run, err := batch.RunStage(ctx, batch.Job[ProgRun, ProgRecord]{Stage: &ProgStage, Plan: &plan,
		Key: ProgRun.ID, Out: opts.Out, Shard: opts.Shard, Inputs: []string{opts.In}, Workers: workers,
		Progress: opts.Progress, Label: "trace prog", QuietIdle: true,
		// A run capped by Max cannot say its shard is done: no marker.
		Unmarked: opts.Max > 0,
		Prepare: func(plan batch.Plan[ProgRun]) error {
			if len(plan.Todo) == 0 {
				return nil
			}
			if pool, err = newPool(workers); err != nil {
				return fmt.Errorf("start trace workers: %w", err)
			}
			return nil
		},
		Admit: func(ProgRun, int) batch.Admission {
			if opts.Max > 0 && written >= opts.Max {
				sum.Stopped = true
				return batch.Stop
			}
			written++ // the item's line is written, whatever it holds
			return batch.Take
		},
		Do: func(ctx context.Context, _ int, r ProgRun) (ProgRecord, error) {
			rec := traceRun(ctx, pool, r)
			return rec, ctx.Err()
		},
		Write: func(w *jsonl.Writer, _ ProgRun, rec ProgRecord, err error) (string, error) {
			if err != nil {
				return "", err
			}
			if err := w.Write(rec); err != nil {
				return "", fmt.Errorf("write %s: %w", opts.Out, err)
			}
			sum.count(&rec)
			return rec.Verdict, nil
		}})
	sum.Seconds = run.Seconds
	return sum, err
}

func (s *ProgSummary) count(r *ProgRecord) {
	s.Verdicts[r.Verdict]++
	if r.Solution < 0 {
		return
	}
	s.Statuses[string(r.Status)]++
	if r.Status.Complete() {
		s.Kept++
	} else {
		s.Dropped++
	}
}

// traceRun traces one run and judges it.
func traceRun(ctx context.Context, pool *Pool, r ProgRun) ProgRecord {
	p := r.Problem
	rec := ProgRecord{Name: p.Name, Solution: r.Solution, TestKind: r.Kind, Test: r.Test}
	if r.Solution < 0 {
		rec.Verdict, rec.Reason = r.Why, noRunReason(p, r.Why)
		rec.Result = Result{ID: r.ID(), Status: Error, Error: rec.Reason, Codes: []Code{}, Frames: []Frame{}}
		return rec
	}
	tests := p.tests(r.Kind)
	maxRepr := pool.Options().MaxRepr
	res, end := pool.TraceProg(ctx, r.ID(), p.Solutions.Solution[r.Solution], tests.Input[r.Test])
	if !res.Status.Complete() {
		// CWM's drop rule: a trace over the caps is left out of the data;
		// the line keeps the run's judgement and why it has no trace.
		res.Codes, res.Frames = []Code{}, []Frame{}
	}
	rec.Result, rec.ProgEnd = res, end
	rec.Verdict, rec.Reason = judge(&res, end, tests.Output[r.Test], pool.Options().MaxCapture)
	rec.Correct = rec.Verdict == VerdictPassed
	rec.Stdout = Truncate(res.Stdout, maxRepr)
	rec.Expected = Truncate(tests.Output[r.Test], maxRepr)
	return rec
}

// judge says how a run went, as a judge would: by how the program ended,
// then by its output.
func judge(res *Result, end ProgEnd, expected string, maxStdout int) (verdict, reason string) {
	switch res.Status {
	case Timeout:
		return VerdictTimeout, res.Error
	case Memory:
		return VerdictMemory, res.Error
	case Error:
		return VerdictError, res.Error
	}
	// ok, exception, or too_long (the program ran on untraced to its end).
	exited := end.ExitCode != nil && *end.ExitCode == 0
	switch {
	case end.Raised == "EOFError":
		return VerdictEOF, "the program read past the end of its input: " + res.Output
	case end.Raised != "" && !exited:
		return VerdictRuntime, "the program raised " + res.Output
	case res.Stats.StdoutChars > maxStdout:
		return VerdictOutputLimit, fmt.Sprintf("the program printed %d characters, over the limit of %d kept for judging", res.Stats.StdoutChars, maxStdout)
	case !OutputsMatch(res.Stdout, expected):
		return VerdictWrong, "the output is not the expected one"
	}
	return VerdictPassed, ""
}

func noRunReason(p *Problem, why string) string {
	if why == VerdictNoTests {
		return "the problem has no test of the kinds chosen"
	}
	langs := map[int]int{}
	for _, l := range p.Solutions.Language {
		langs[l]++
	}
	if len(langs) == 0 {
		return "the problem has no solution"
	}
	var parts []string
	for l, n := range langs {
		parts = append(parts, fmt.Sprintf("%d of language %d", n, l))
	}
	sort.Strings(parts)
	return fmt.Sprintf("no Python 3 solution (language %d); the problem has %s", Python3, strings.Join(parts, ", "))
}

// Write prints the summary for people.
func (s *ProgSummary) Write(w io.Writer) {
	total := 0
	for _, n := range s.Verdicts {
		total += n
	}
	fmt.Fprintf(w, "traced %d runs in %.1fs: %s\n", total, s.Seconds, batch.FormatCounts(s.Verdicts))
	fmt.Fprintf(w, "traces: %d kept, %d dropped (%s)\n", s.Kept, s.Dropped, batch.FormatCounts(s.Statuses))
	if s.Skipped > 0 {
		fmt.Fprintf(w, "skipped %d lines already in the output\n", s.Skipped)
	}
	if s.Stopped {
		fmt.Fprintln(w, "stopped at --max")
	}
}
