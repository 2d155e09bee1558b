// Package narrate is cwm trace narrate: a model rewrites each trace of a
// traces file (cwm trace func's output) as step-by-step natural-language
// reasoning ending in the call's result in a fixed form, and a
// consistency filter keeps a narration only when that result holds
// against the traced call by CruxEval's check, run in the sandbox. It is
// the natural-language variant of CWM's trace data (CWM-SPEC 1.5:
// "narrations whose final answer disagrees with the real trace are
// dropped").
package narrate

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"cwm/internal/batch"
	"cwm/internal/errkind"
	"cwm/internal/eval"
	"cwm/internal/jsonl"
	"cwm/internal/model"
	"cwm/internal/shard"
	"cwm/internal/traceline"
	"cwm/internal/tracer"
)

// Stage is cwm trace narrate as a batch stage: a line per trace of the
// input, keyed by the trace's id.
var Stage = batch.Stage{Name: "trace narrate", LineKey: jsonl.Field("id"), Expected: inputIDs}

// DefaultContext is CWM's context window in tokens.
const DefaultContext = 131072

//go:embed prompts/narrate.txt
var promptTemplate string

// Reasons a narration is kept or dropped: a line's reason.
const (
	// Consistent: the narration's answer holds against the traced call;
	// the only reason a narration is kept.
	Consistent = "consistent"
	// NoAnswer: the narration has no [ANSWER] block in either form.
	NoAnswer = "no_answer"
	// WrongAnswer: `assert CALL == PREDICTED` failed (or did not compile).
	WrongAnswer = "wrong_answer"
	// CallEchoed: the predicted value contains the call (CruxEval's rule).
	CallEchoed = "call_echoed"
	// CheckTimeout: the check ran past CruxEval's 3 s.
	CheckTimeout = "check_timeout"
	// WrongException: an exception predicted of another type than raised.
	WrongException = "wrong_exception"
	// MissedException: a value predicted; the call raised.
	MissedException = "missed_exception"
	// UnexpectedException: an exception predicted; the call returned.
	UnexpectedException = "unexpected_exception"
	// TooLong: the prompt is longer than the model's context; not asked.
	TooLong = "too_long"
	// Incomplete: the trace is not complete (status other than ok and
	// exception); not asked.
	Incomplete = "incomplete"
	// NotACall: the line is not a trace of a call of cwm trace func (a
	// trace repo episode, a context without trace func's main); not asked.
	NotACall = "not_a_call"
)

// Trace is an input line as narrate reads it: a line of cwm trace func.
type Trace struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Context string `json:"context"`
	Text    string `json:"text"`
	Output  string `json:"output"`
	Call    string `json:"call"`
	Input   string `json:"input"`
}

// Line is an output line: a trace's narration and the filter's verdict.
type Line struct {
	ID string `json:"id"`
	// Function is the traced code (the context without its main); Call
	// the traced call.
	Function string `json:"function"`
	Call     string `json:"call"`
	// Status and Output are the trace's: how the call ended and the value
	// text of what it returned or raised.
	Status string `json:"status"`
	Output string `json:"output"`
	// Narration is the model's text ("" when the model was not asked).
	Narration string `json:"narration"`
	// Predicted is the value the narration's answer gives; Raises the
	// exception type it gives instead.
	Predicted string `json:"predicted"`
	Raises    string `json:"raises"`
	Kept      bool   `json:"kept"`
	// Reason is why the narration was kept or dropped (Consistent, ...);
	// Detail says more (the failed assertion, the types compared).
	Reason       string      `json:"reason"`
	Detail       string      `json:"detail"`
	Model        string      `json:"model"`
	Usage        model.Usage `json:"usage"`
	FinishReason string      `json:"finish_reason"`
	Retries      int         `json:"retries"`
}

// Options configure a narrate run.
type Options struct {
	// In is the traces file; Out the narrations, appended to and resumed.
	In, Out string
	Client  *model.Client
	Scorer  *eval.Scorer
	// Context is the model's context in tokens (DefaultContext when 0):
	// a trace whose prompt is longer, counted as bytes/4 as cwm counts
	// tokens a server did not report (model.EstimateTokens), is not sent.
	Context int
	// Max, when positive, stops the run once the shard has that many
	// lines in Out, those of earlier runs included.
	Max         int
	Shard       shard.Shard
	Concurrency int
	Progress    io.Writer
	// OnModelError is told of each trace the model server failed after
	// its retries (not written; the next run retries it).
	OnModelError func(id string, err error)
}

// ReadTraces reads a traces file, checking every line before anything
// runs: a line that is not JSON, has no id or repeats one is an input
// error naming the file and line.
func ReadTraces(path string) ([]Trace, error) {
	var ts []Trace
	seen := map[string]int{}
	err := jsonl.DecodeInput(path, func(n int, t Trace) error {
		switch {
		case t.ID == "":
			return errkind.New(errkind.Input, `a trace without "id"`)
		case seen[t.ID] > 0:
			return errkind.Errorf(errkind.Input, "trace %s: id already used on line %d", t.ID, seen[t.ID])
		}
		seen[t.ID] = n
		ts = append(ts, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, errkind.Errorf(errkind.Input, "%s: no traces", path)
	}
	return ts, nil
}

// inputIDs are the ids of the input's traces: every one gets a line.
func inputIDs(inputs []string, _ map[string]string) ([]string, error) {
	var ids []string
	for _, in := range inputs {
		ts, err := ReadTraces(in)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			ids = append(ids, t.ID)
		}
	}
	return ids, nil
}

// Prompt is the user message that asks for t's narration.
func Prompt(t *Trace) string {
	return strings.NewReplacer("{call}", t.Call, "{trace}", t.Text).Replace(promptTemplate)
}

// Run narrates the traces of the shard not yet in Out and returns the
// summary of every line of the shard in Out, those of earlier runs
// included.
func Run(ctx context.Context, traces []Trace, opts Options) (*Summary, error) {
	if opts.Context <= 0 {
		opts.Context = DefaultContext
	}
	key := func(t Trace) string { return t.ID }
	resumed, taken := 0, 0
	run, err := batch.RunStage(ctx, batch.Job[Trace, Line]{Stage: &Stage, Label: "trace narrate",
		Items: traces, Key: key, Out: opts.Out, Shard: opts.Shard, Order: batch.UnfinishedLast,
		Inputs: []string{opts.In}, Params: []string{"context", strconv.Itoa(opts.Context)},
		Workers: max(opts.Concurrency, 1), Progress: opts.Progress,
		Prepare: func(plan batch.Plan[Trace]) error { resumed = plan.Resumed(); return nil },
		Admit: func(Trace, int) batch.Admission {
			if opts.Max > 0 && resumed+taken >= opts.Max {
				return batch.Stop
			}
			taken++
			return batch.Take
		},
		Do:      func(ctx context.Context, _ int, t Trace) (Line, error) { return narrateOne(ctx, &opts, &t) },
		Outcome: func(l Line) string { return l.Reason },
		Aside: func(t Trace, err error) string {
			if !errors.As(err, new(*model.ModelError)) {
				return ""
			}
			if opts.OnModelError != nil {
				opts.OnModelError(t.ID, err)
			}
			return "model_error"
		}})
	if err != nil {
		return nil, err
	}
	sum, err := Summarize(opts.Out, run.Want(key))
	if err != nil {
		return nil, err
	}
	sum.Resumed, sum.ModelErrors, sum.Seconds = run.Plan.Resumed(), run.SetAside, run.Seconds
	sum.Model = opts.Client.Model()
	return sum, nil
}

// narrateOne asks for one trace's narration and filters it.
func narrateOne(ctx context.Context, opts *Options, t *Trace) (Line, error) {
	l := Line{ID: t.ID, Call: t.Call, Status: t.Status, Output: t.Output, Model: opts.Client.Model()}
	code, isCall := functionOf(t)
	l.Function = code
	switch {
	case !isCall:
		l.Reason, l.Detail = NotACall, "the context does not end in cwm trace func's main returning the call"
		return l, nil
	case !traceline.Status(t.Status).Complete() || t.Text == "":
		l.Reason, l.Detail = Incomplete, "the trace's status is "+strconv.Quote(t.Status)
		return l, nil
	}
	prompt := Prompt(t)
	if n := model.EstimateTokens(len(prompt)); n > int64(opts.Context) {
		l.Reason, l.Detail = TooLong, fmt.Sprintf("the prompt is about %d tokens, the model's context %d", n, opts.Context)
		return l, nil
	}
	rep, err := opts.Client.Complete(ctx, model.Request{Messages: []model.Message{{Role: "user", Content: prompt}}})
	if err != nil {
		return Line{}, fmt.Errorf("narrate %s: %w", t.ID, err)
	}
	l.Narration, l.Usage, l.FinishReason, l.Retries = rep.Message.Content, rep.Usage, rep.FinishReason, rep.Retries.Total()
	l.Reason, l.Detail = verdict(ctx, opts.Scorer, t, code, &l)
	if ctx.Err() != nil {
		return Line{}, ctx.Err()
	}
	l.Kept = l.Reason == Consistent
	return l, nil
}

// functionOf is the code of a trace func trace: its context without the
// main that returns the call (tracer.Context's suffix). ok is false for a
// trace that is not of that shape.
func functionOf(t *Trace) (code string, ok bool) {
	if t.Call == "" {
		return "", false
	}
	suffix := tracer.Context("", t.Call)
	if !strings.HasSuffix(t.Context, suffix) {
		return "", false
	}
	return strings.TrimSuffix(t.Context, suffix) + "\n", true
}
