package batch

import (
	"context"
	"fmt"
	"io"
	"time"

	"cwm/internal/jsonl"
	"cwm/internal/progress"
	"cwm/internal/shard"
)

// Stage is a batch stage as a value: its name (the command's, which its
// shards' markers record) and what its output lines are keyed by. It is
// declared in the stage's domain package, beside the code that makes the
// keys, so that cwm merge reads a stage's output with the same functions
// that wrote and resumed it, and cannot drift from them.
type Stage struct {
	// Name is the command, "trace func": the marker's stage.
	Name string
	// LineKey is a line's own key (unique in the output); ItemKey the key
	// of the item it came from, which decided its shard (nil: LineKey;
	// an empty key: the line does not say).
	LineKey, ItemKey func(line []byte) (string, error)
	// Sidecars are files written beside the output.
	Sidecars []Sidecar
	// Expected lists the keys of all the items of a run from its inputs
	// and params, for a stage that writes a line for every item (nil:
	// the stage cannot tell which items have no line).
	Expected func(inputs []string, params map[string]string) ([]string, error)
}

// MergeSpec is what Merge needs to join shards of s into out.
func (s *Stage) MergeSpec(shards []string, out string) MergeSpec {
	return MergeSpec{Shards: shards, Out: out, LineKey: s.LineKey, ItemKey: s.ItemKey, Sidecars: s.Sidecars}
}

// Start removes the marker of a run of s writing out, for the part given;
// Finish on what it returns writes it again when the run got to its end.
// Params are name, value pairs: the options that decide the items besides
// the inputs. An empty input is left out.
func (s *Stage) Start(out string, part shard.Shard, inputs []string, params ...string) (*ShardRun, error) {
	var in []string
	for _, i := range inputs {
		if i != "" {
			in = append(in, i)
		}
	}
	sr, err := StartShard(s.Name, out, part, in...)
	if err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(params); i += 2 {
		sr.Param(params[i], params[i+1])
	}
	return sr, nil
}

// Job is one run of a stage over its items: the shell every batch stage
// runs in. RunStage resumes it from Out, runs the items of its shard,
// writes each result, counts outcomes on a progress bar, sets aside the
// items whose error is the model server's, and marks the shard finished
// when nothing was set aside.
type Job[T, R any] struct {
	Stage *Stage
	Items []T
	// Plan, when set, is the plan of Items an earlier Resume made (a
	// stage that checks its items to do before it runs); RunStage then
	// reads Out no more.
	Plan *Plan[T]
	// Key is an item's key, as the output's lines record it
	// (Stage.LineKey reads it back).
	Key   func(T) string
	Out   string
	Shard shard.Shard
	Order Order
	// Inputs and Params go to the shard's marker (see Stage.Start).
	Inputs []string
	Params []string
	// Unmarked leaves the shard's marker to the caller: trace repo writes
	// a spool, and its output is finished only once the spool is sampled.
	Unmarked bool
	// Workers, Admit and InOrder are Options'.
	Workers int
	Admit   func(item T, running int) Admission
	InOrder bool
	// Progress, when set, gets a progress bar labelled Label.
	Progress io.Writer
	Label    string
	// QuietIdle, when the plan leaves nothing to do, opens no output and
	// shows no bar: a resumed run with nothing left leaves no trace.
	QuietIdle bool
	// Prepare, when set, runs once the plan is known and before any item
	// does: what the items to do need (their environments, a directory).
	Prepare func(plan Plan[T]) error
	Do      func(ctx context.Context, worker int, item T) (R, error)
	// Stream, when set instead of Do, is Do for a stage whose item
	// writes lines while it runs (trace func's fuzzed inputs, each as it
	// is kept, before the function's own line): emit appends line to Out
	// at once, from the worker, and counts outcome in the tally ("" counts
	// nothing). Its result is then written as Do's, after every line it
	// emitted. Not with AtEnd, which writes nothing until the end.
	Stream func(ctx context.Context, worker int, item T, emit func(line any, outcome string) error) (R, error)
	// Write writes an item's result to the output and names its outcome
	// on the progress bar and in the tally ("" counts nothing); an error
	// ends the run. An item whose Do failed with an error Aside does not
	// take is passed with it: Write decides (return it to end the run,
	// or write the failure as a result). nil writes res as one line,
	// named by Outcome.
	Write   func(w *jsonl.Writer, item T, res R, err error) (string, error)
	Outcome func(R) string
	// Aside names an item's error that is set aside: counted under that
	// name, not written, retried by the next run ("model_error": the model
	// server failing after its retries). The error is Do's or Write's; ""
	// (or a nil Aside) does not set it aside.
	Aside func(item T, err error) string
	// Finished, when set, is the item count the marker records (default:
	// the shard's items).
	Finished func(plan Plan[T]) int
	// AtEnd, when set, is for a stage whose output is rewritten whole
	// when the run ends (tasks validate's verdicts, in the tasks'
	// order): the run does not resume from Out, Write gets a nil writer
	// and keeps the results, and AtEnd writes Out once every item is
	// done. A run that fails leaves Out as it was. An empty Out then
	// writes no file and no marker: the results are only returned.
	AtEnd func(out string) error
	// Drain, when set, lets the items running when Write (or Do) first
	// fails finish and be written; no more are handed out, and the run
	// returns that first error (tasks mutate: a candidate's failure
	// loses none of the validations already under way).
	Drain bool
	// Total, when set, is the bar's total (default: the items to do),
	// and Advance whether an item's result moves the bar (default:
	// every item's does): tasks mutate counts tasks written against
	// its --max.
	Total   func(plan Plan[T]) int
	Advance func(R) bool
}

// StageRun is what RunStage did.
type StageRun[T any] struct {
	Plan  Plan[T]
	Tally *Tally
	// SetAside is how many items Aside took.
	SetAside int
	Seconds  float64
}

// Want holds the keys of the shard's items: what a summary covers.
func (r StageRun[T]) Want(key func(T) string) map[string]bool {
	want := map[string]bool{}
	for _, it := range r.Plan.Mine {
		want[key(it)] = true
	}
	return want
}

// RunStage runs j: the marker removed, the plan resumed from j.Out, the
// items to do run and written as they finish, and the marker written
// when the run ended with every item of the shard in the output. When
// ctx is cancelled, results still arriving are dropped (their items are
// redone by the next run) and ctx's error is returned.
func RunStage[T, R any](ctx context.Context, j Job[T, R]) (StageRun[T], error) {
	var run StageRun[T]
	var sr *ShardRun
	var err error
	if j.Stream != nil && j.AtEnd != nil {
		return run, fmt.Errorf("%s: a job cannot both stream lines and write its output at the end", j.Stage.Name)
	}
	if j.Out != "" && !j.Unmarked {
		if sr, err = j.Stage.Start(j.Out, j.Shard, j.Inputs, j.Params...); err != nil {
			return run, err
		}
	}
	resumeFrom := j.Out
	if j.AtEnd != nil {
		resumeFrom = ""
	}
	if j.Plan != nil {
		run.Plan = *j.Plan
	} else if run.Plan, err = Resume(Spec[T]{Items: j.Items, Key: j.Key, Out: resumeFrom, OutKey: j.Stage.LineKey,
		Shard: j.Shard, Order: j.Order}); err != nil {
		return run, err
	}
	if j.Prepare != nil {
		if err := j.Prepare(run.Plan); err != nil {
			return run, err
		}
	}
	run.Tally = NewTally(nil)
	if j.QuietIdle && len(run.Plan.Todo) == 0 {
		return run, sr.Finish(finished(j, run.Plan))
	}
	var w *jsonl.Writer
	if j.AtEnd == nil {
		if w, err = jsonl.Append(j.Out); err != nil {
			return run, err
		}
		defer w.Close()
	}
	var bar *progress.Bar
	if j.Progress != nil {
		total := len(run.Plan.Todo)
		if j.Total != nil {
			total = j.Total(run.Plan)
		}
		bar = progress.New(j.Progress, j.Label, total)
	}
	run.Tally = NewTally(bar)
	write := j.Write
	if write == nil {
		write = func(w *jsonl.Writer, _ T, res R, err error) (string, error) {
			if err != nil {
				return "", err
			}
			if err := w.Write(res); err != nil {
				return "", fmt.Errorf("write %s: %w", j.Out, err)
			}
			return j.Outcome(res), nil
		}
	}
	do := j.Do
	if j.Stream != nil {
		emit := func(line any, outcome string) error {
			if err := w.Write(line); err != nil {
				return fmt.Errorf("write %s: %w", j.Out, err)
			}
			if outcome != "" {
				run.Tally.Count(outcome)
			}
			return nil
		}
		do = func(ctx context.Context, worker int, it T) (R, error) { return j.Stream(ctx, worker, it, emit) }
	}
	opts := Options[T]{Workers: j.Workers, Progress: bar, InOrder: j.InOrder, Admit: j.Admit}
	if j.Advance != nil {
		opts.Progress = nil // the bar moves below
	}
	var drained error // Drain: the first error
	if j.Drain {
		opts.Admit = func(it T, running int) Admission {
			if drained != nil {
				return Stop
			}
			if j.Admit == nil {
				return Take
			}
			return j.Admit(it, running)
		}
	}
	start := time.Now()
	runErr := Run(ctx, run.Plan.Todo, opts, do,
		func(it T, res R, err error) error {
			if ctx.Err() != nil {
				return nil
			}
			if j.aside(it, err, &run) {
				return nil
			}
			outcome, err := write(w, it, res, err)
			if j.aside(it, err, &run) {
				return nil
			}
			if err != nil && j.Drain {
				if drained == nil {
					drained = err
				}
				return nil
			}
			if err != nil {
				return err
			}
			if outcome != "" {
				run.Tally.Count(outcome)
			}
			if j.Advance != nil && j.Advance(res) {
				bar.Add(1)
			}
			return nil
		})
	if runErr == nil {
		runErr = drained
	}
	bar.Done()
	if w != nil {
		if err := w.Close(); err != nil && runErr == nil {
			runErr = err
		}
	}
	run.Seconds = time.Since(start).Seconds()
	if runErr != nil || run.SetAside > 0 {
		return run, runErr
	}
	if j.AtEnd != nil && j.Out != "" {
		if err := j.AtEnd(j.Out); err != nil {
			return run, err
		}
	}
	return run, sr.Finish(finished(j, run.Plan))
}

// aside sets err aside when Aside names it, counting it in run.
func (j *Job[T, R]) aside(it T, err error, run *StageRun[T]) bool {
	if err == nil || j.Aside == nil {
		return false
	}
	name := j.Aside(it, err)
	if name == "" {
		return false
	}
	run.SetAside++
	run.Tally.Count(name)
	return true
}

// finished is the item count of the shard's marker.
func finished[T, R any](j Job[T, R], plan Plan[T]) int {
	if j.Finished != nil {
		return j.Finished(plan)
	}
	return len(plan.Mine)
}
