package eval

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"cwm/internal/batch"
	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/model"
	"cwm/internal/shard"
	"cwm/internal/trace"
	"cwm/internal/traceline"
)

// TraceRecord is a trace to predict (traceline.Line).
type TraceRecord = traceline.Line

// LoadTraces reads a traces file; incomplete traces are skipped and
// counted. Ids must be unique: a prediction's line is keyed by its trace.
func LoadTraces(path string) (recs []TraceRecord, skipped int, err error) {
	recs, skipped, err = traceline.Load(path)
	if err != nil {
		return nil, 0, err
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[r.ID] {
			return nil, 0, errkind.New(errkind.Input, fmt.Sprintf("%s: duplicate id %q", path, r.ID))
		}
		seen[r.ID] = true
	}
	return recs, skipped, nil
}

// TracePrompt is the trace prompt of r: CWM's opening, the context, the
// start-of-trace sentinel, then the first step frames, as the trace's
// text has them.
func TracePrompt(r *TraceRecord, step int) string {
	b := []byte(trace.TokBeginOfText + trace.TokTraceContextStart + r.Context + trace.TokFrameSep)
	for _, f := range r.Frames[:step] {
		b = trace.AppendFrame(b, f)
	}
	return string(b)
}

// NextSteps are the positions teacher-forced for a trace of n frames: k
// of them spread evenly from the first frame after main's call (all when
// n-1 <= k).
func NextSteps(n, k int) []int {
	if k <= 0 || n <= 1 {
		return nil
	}
	var s []int
	if n-1 <= k {
		for i := 1; i < n; i++ {
			s = append(s, i)
		}
		return s
	}
	for i := range k {
		s = append(s, 1+i*(n-1)/k)
	}
	return s
}

// Counts is matches out of a total.
type Counts struct {
	Match int `json:"match"`
	Total int `json:"total"`
}

func (c *Counts) add(ok bool) {
	c.Total++
	if ok {
		c.Match++
	}
}

// Rate is Match/Total (0 when there is nothing).
func (c Counts) Rate() float64 {
	if c.Total == 0 {
		return 0
	}
	return float64(c.Match) / float64(c.Total)
}

// StepMatch counts state, action and both matches over positions.
type StepMatch struct {
	State  int `json:"state"`
	Action int `json:"action"`
	Both   int `json:"both"`
	// Positions is the denominator: the larger of the two frame counts.
	Positions int `json:"positions"`
}

// FidelityLine is one output line of cwm eval fidelity: a whole-trace
// prediction (Task "full") or one teacher-forced frame (Task "next").
type FidelityLine struct {
	ID         string `json:"id"`
	Task       string `json:"task"`
	Step       int    `json:"step"`
	Model      string `json:"model"`
	Completion string `json:"completion"`
	// Strict: the completion parses with trace.Parse (exactly CWM's
	// encoding); Valid: no format errors in a lenient parse.
	Strict bool `json:"strict"`
	Valid  bool `json:"valid"`
	// Full: frame counts, matches by position and by alignment, output.
	PredFrames        int       `json:"pred_frames,omitempty"`
	TrueFrames        int       `json:"true_frames,omitempty"`
	Positional        StepMatch `json:"positional"`
	Aligned           StepMatch `json:"aligned"`
	AlignedByPosition bool      `json:"aligned_by_position,omitempty"`
	OutputMatch       bool      `json:"output_match"`
	// ByDecile[d] counts the true frames in the d-th tenth of the trace
	// whose aligned prediction matches in state and action; ByRange the
	// same by absolute step (0-9, 10-99, 100-999, 1000+); ByKind the
	// locals and returned values of each value kind predicted exactly.
	ByDecile [10]Counts        `json:"by_decile"`
	ByRange  [4]Counts         `json:"by_range"`
	ByKind   map[string]Counts `json:"by_kind,omitempty"`
	// Next: the predicted frame against the true one.
	StateMatch  bool   `json:"state_match"`
	ActionMatch bool   `json:"action_match"`
	Diff        string `json:"diff,omitempty"`

	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	Retries          int   `json:"retries"`
}

// ScoreFull scores a whole predicted trace (the completion of r's
// Prompt(0)) against r.
func ScoreFull(r *TraceRecord, completion string) FidelityLine {
	l := FidelityLine{ID: r.ID, Task: "full", Completion: completion, TrueFrames: len(r.Frames), ByKind: map[string]Counts{}}
	text := TracePrompt(r, 0) + completion
	if !strings.Contains(completion, trace.TokEndOfText) {
		text += trace.TokEndOfText // servers strip the stop sequence
	}
	_, err := trace.Parse(text)
	pt, st := trace.ParseLenient(completion)
	// An empty trace is no trace, however well formed.
	l.Strict = err == nil && len(pt.Frames) > 0
	l.Valid = st.ValidFormat() && len(pt.Frames) > 0
	l.PredFrames = len(pt.Frames)
	p, q := trace.Expand(pt.Frames), trace.Expand(r.Frames)
	l.Positional.Positions = max(len(p), len(q))
	l.Aligned.Positions = l.Positional.Positions
	for i := range min(len(p), len(q)) {
		s, a, _ := trace.MatchFrame(p[i], q[i])
		l.Positional.count(s, a)
	}
	pairs, byPos := Align(p, q)
	l.AlignedByPosition = byPos
	for j, i := range pairs {
		s, a := false, false
		if i >= 0 {
			s, a, _ = trace.MatchFrame(p[i], q[j])
			l.Aligned.count(s, a)
		}
		l.ByDecile[10*j/len(q)].add(s && a)
		l.ByRange[rangeOf(j)].add(s && a)
		for _, lc := range q[j].Locals {
			ok := false
			if i >= 0 {
				for _, pl := range p[i].Locals {
					if pl.Name == lc.Name {
						ok = pl.Value == lc.Value
						break
					}
				}
			}
			c := l.ByKind[ValueKind(lc.Value)]
			c.add(ok)
			l.ByKind[ValueKind(lc.Value)] = c
		}
		if q[j].Event == trace.Return {
			c := l.ByKind[ValueKind(q[j].Arg)]
			c.add(i >= 0 && p[i].Event == trace.Return && p[i].Arg == q[j].Arg)
			l.ByKind[ValueKind(q[j].Arg)] = c
		}
	}
	po, praised, pok := trace.EntryOutput(p)
	qo, qraised, qok := trace.EntryOutput(q)
	l.OutputMatch = pok && qok && po == qo && praised == qraised
	return l
}

func (m *StepMatch) count(state, action bool) {
	if state {
		m.State++
	}
	if action {
		m.Action++
	}
	if state && action {
		m.Both++
	}
}

func rangeOf(j int) int {
	switch {
	case j < 10:
		return 0
	case j < 100:
		return 1
	case j < 1000:
		return 2
	}
	return 3
}

// RangeNames names ByRange's buckets.
var RangeNames = [4]string{"0-9", "10-99", "100-999", "1000+"}

// ScoreNext scores one predicted frame (the completion of r's
// Prompt(step)) against frame step, as cwm serve's trace episodes do: one
// well-formed frame, its ".." resolved against the true frames before it.
func ScoreNext(r *TraceRecord, step int, completion string) FidelityLine {
	l := FidelityLine{ID: r.ID, Task: "next", Step: step, Completion: completion}
	text := strings.TrimSuffix(completion, trace.TokEndOfText)
	if !strings.HasSuffix(text, trace.TokFrameSep) {
		text += trace.TokFrameSep // the stop sequence, stripped by servers
	}
	pred, st := trace.ParseLenient(text)
	var stp trace.Stepper
	for _, f := range r.Frames[:step] {
		stp.Take(f)
	}
	if st.ValidFormat() && len(pred.Frames) == 1 {
		l.Valid = true
		enc := trace.AppendFrame(nil, pred.Frames[0])
		l.Strict = string(enc) == text
		l.StateMatch, l.ActionMatch, l.Diff = trace.MatchFrame(stp.Resolve(pred.Frames[0]), stp.Resolve(r.Frames[step]))
	} else {
		l.Diff = fmt.Sprintf("not one well-formed frame (%d frames, %d format errors)", len(pred.Frames), st.FormatErrors)
	}
	return l
}

// FidelityOptions configure a fidelity run.
type FidelityOptions struct {
	Traces []TraceRecord
	// Full asks for each whole trace; Next for that many teacher-forced
	// frames per trace (NextSteps).
	Full   bool
	Next   int
	Client *model.Client
	Out    string
	Shard  shard.Shard
	// Input is the file the items were read from, which a shard's marker
	// records for cwm merge (empty: none).
	Input       string
	Concurrency int
	Progress    io.Writer
	// OnModelError is told of each request the model server failed.
	OnModelError func(id string, err error)
}

type fitem struct {
	r    *TraceRecord
	task string
	step int
}

func (it fitem) key() string {
	if it.task == "full" {
		return it.r.ID + "#full"
	}
	return it.r.ID + "#next" + strconv.Itoa(it.step)
}

// FidelityLineKey is the resume (and shard) key of a line of cwm eval
// fidelity: "ID#full" or "ID#nextSTEP".
func FidelityLineKey(line []byte) (string, error) {
	var l FidelityLine
	if err := jsonl.Unmarshal(line, &l); err != nil {
		return "", err
	}
	return fitem{&TraceRecord{ID: l.ID}, l.Task, l.Step}.key(), nil
}

// RunFidelity asks the model for the traces and scores them.
func RunFidelity(ctx context.Context, opts FidelityOptions) (*FidelitySummary, error) {
	var items []fitem
	for i := range opts.Traces {
		r := &opts.Traces[i]
		if opts.Full {
			items = append(items, fitem{r, "full", 0})
		}
		for _, s := range NextSteps(len(r.Frames), opts.Next) {
			items = append(items, fitem{r, "next", s})
		}
	}
	run, err := batch.RunStage(ctx, batch.Job[fitem, FidelityLine]{Stage: &FidelityStage, Label: "eval fidelity", Items: items,
		Key: fitem.key, Out: opts.Out, Shard: opts.Shard, Order: batch.UnfinishedLast,
		Inputs: inputs(opts.Input), Params: []string{"next", strconv.Itoa(opts.Next)},
		Workers: opts.Concurrency, Progress: opts.Progress,
		Do: func(ctx context.Context, _ int, it fitem) (FidelityLine, error) {
			pr := Prompt{Text: TracePrompt(it.r, it.step), Stop: []string{trace.TokEndOfText}}
			if it.task == "next" {
				pr.Stop = []string{trace.TokFrameSep}
			}
			rep, err := ask(ctx, opts.Client, Completions, pr, nil, 0)
			if err != nil {
				return FidelityLine{}, err
			}
			var l FidelityLine
			if it.task == "full" {
				l = ScoreFull(it.r, rep.Message.Content)
			} else {
				l = ScoreNext(it.r, it.step, rep.Message.Content)
			}
			l.Model = opts.Client.Model()
			l.PromptTokens, l.CompletionTokens, l.Retries = rep.Usage.PromptTokens, rep.Usage.CompletionTokens, rep.Retries.Total()
			return l, nil
		},
		Outcome: func(l FidelityLine) string { return l.Task },
		Aside: modelErrorsAside(func(it fitem, err error) {
			if opts.OnModelError != nil {
				opts.OnModelError(it.key(), err)
			}
		})})
	if err != nil {
		return nil, err
	}
	sum, err := SummarizeFidelity(opts.Out, run.Want(fitem.key))
	if err != nil {
		return nil, err
	}
	sum.ModelErrors, sum.Resumed, sum.Seconds = run.SetAside, run.Plan.Resumed(), run.Seconds
	if opts.Client != nil {
		sum.Model = opts.Client.Model()
	}
	return sum, nil
}
