package eval

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"cwm/internal/batch"
	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/model"
	"cwm/internal/passk"
	"cwm/internal/shard"
)

// Options configure a CruxEval run.
type Options struct {
	Problems []Problem
	Mode     Mode
	API      API
	// Samples is the number of completions per problem (pass@k needs
	// k <= Samples); sample s is sent with seed Seed+s when Seed is set.
	Samples int
	Seed    *int64
	// Think are the reasoning mode's thinking tokens (DefaultThink when
	// zero).
	Think   Think
	Client  *model.Client
	Checker Checker
	// Out is the JSONL output, one line per (problem, sample); appended
	// to and resumed.
	Out   string
	Shard shard.Shard
	// Input is the file the items were read from, which a shard's marker
	// records for cwm merge (empty: none).
	Input string
	// Concurrency is how many samples are in flight at once.
	Concurrency int
	// Progress, when set, shows a progress bar.
	Progress io.Writer
	// OnModelError is told of each sample the model server failed after
	// its retries (not written; the next run retries it).
	OnModelError func(id string, sample int, err error)
	// CountEcho is how pass@k counts a sample that repeats the call
	// (passk.EchoWrong when empty).
	CountEcho passk.Echo
}

// Line is one output line: a sample's completion, its answer and score.
type Line struct {
	ID     string `json:"id"`
	Sample int    `json:"sample"`
	Mode   Mode   `json:"mode"`
	API    API    `json:"api"`
	Model  string `json:"model"`
	// Completion is the model's text; Reasoning the thinking a reasoning
	// model's server returned beside it.
	Completion string `json:"completion"`
	Reasoning  string `json:"reasoning,omitempty"`
	// Answer is the expression read from the completion; Output the true
	// output's repr.
	Answer  string  `json:"answer"`
	Output  string  `json:"output"`
	Verdict Verdict `json:"verdict"`
	Correct bool    `json:"correct"`
	// Detail says why an answer is wrong (the exception, the format
	// error).
	Detail string `json:"detail,omitempty"`
	// Frames is the number of frames of a trace-full completion.
	Frames           int     `json:"frames,omitempty"`
	FinishReason     string  `json:"finish_reason"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	TokensEstimated  bool    `json:"tokens_estimated,omitempty"`
	Retries          int     `json:"retries"`
	ModelSeconds     float64 `json:"model_seconds"`
	ScoreSeconds     float64 `json:"score_seconds"`
}

// key is a line's resume key.
func key(id string, sample int) string { return id + "#" + strconv.Itoa(sample) }

type item struct {
	p      *Problem
	sample int
}

// Run evaluates opts.Problems and returns the summary of every line of
// the shard in Out, those of earlier runs included.
func Run(ctx context.Context, opts Options) (*Summary, error) {
	if opts.Samples < 1 {
		opts.Samples = 1
	}
	if _, err := BuildPrompt(opts.Mode, opts.API, &Problem{ID: "check", Code: "def f(): pass"}); err != nil {
		return nil, err
	}
	if err := checkOutMode(opts.Out, opts.Mode); err != nil {
		return nil, err
	}
	var items []item
	for i := range opts.Problems {
		for s := range opts.Samples {
			items = append(items, item{&opts.Problems[i], s})
		}
	}
	itemKey := func(it item) string { return key(it.p.ID, it.sample) }
	run, err := batch.RunStage(ctx, batch.Job[item, Line]{Stage: &CruxEvalStage, Label: "eval cruxeval " + string(opts.Mode),
		Items: items, Key: itemKey, Out: opts.Out, Shard: opts.Shard, Order: batch.UnfinishedLast,
		Inputs: inputs(opts.Input), Params: []string{"mode", string(opts.Mode), "samples", strconv.Itoa(opts.Samples)},
		Workers: opts.Concurrency, Progress: opts.Progress,
		Do:      func(ctx context.Context, _ int, it item) (Line, error) { return sampleOne(ctx, &opts, it) },
		Outcome: func(l Line) string { return string(l.Verdict) },
		Aside: modelErrorsAside(func(it item, err error) {
			if opts.OnModelError != nil {
				opts.OnModelError(it.p.ID, it.sample, err)
			}
		})})
	if err != nil {
		return nil, err
	}
	sum, err := SummarizeEcho(opts.Out, opts.Mode, run.Want(itemKey), opts.CountEcho)
	if err != nil {
		return nil, err
	}
	sum.Resumed, sum.ModelErrors, sum.Seconds = run.Plan.Resumed(), run.SetAside, run.Seconds
	if opts.Client != nil {
		sum.Model = opts.Client.Model()
	}
	return sum, nil
}

// sampleOne asks the model for one sample and scores its answer.
func sampleOne(ctx context.Context, opts *Options, it item) (Line, error) {
	pr, err := BuildPromptThink(opts.Mode, opts.API, it.p, opts.Think)
	if err != nil {
		return Line{}, err
	}
	rep, err := ask(ctx, opts.Client, opts.API, pr, opts.Seed, it.sample)
	if err != nil {
		return Line{}, err
	}
	l := Line{ID: it.p.ID, Sample: it.sample, Mode: opts.Mode, API: opts.API, Model: opts.Client.Model(),
		Completion: rep.Message.Content, Reasoning: rep.Reasoning, Output: it.p.Output, FinishReason: rep.FinishReason,
		PromptTokens: rep.Usage.PromptTokens, CompletionTokens: rep.Usage.CompletionTokens, TokensEstimated: rep.Usage.Estimated,
		Retries: rep.Retries.Total(), ModelSeconds: rep.Duration.Seconds()}
	ex := ExtractAnswerThink(opts.Mode, l.Completion, opts.Think)
	l.Answer, l.Frames = ex.Answer, ex.Frames
	if ex.FormatError != "" {
		l.Verdict, l.Detail = FormatError, ex.FormatError
		return l, nil
	}
	t0 := time.Now()
	l.Verdict, l.Detail = opts.Checker.Check(ctx, it.p, l.Answer)
	l.ScoreSeconds = time.Since(t0).Seconds()
	if ctx.Err() != nil {
		return Line{}, ctx.Err()
	}
	l.Correct = l.Verdict == Pass
	return l, nil
}

// SampleLineKey is the resume (and shard) key of a line of cwm eval
// cruxeval or halt: "ID#SAMPLE".
func SampleLineKey(line []byte) (string, error) { return lineKey(line) }

func lineKey(line []byte) (string, error) {
	var l struct {
		ID     string `json:"id"`
		Sample int    `json:"sample"`
	}
	if err := jsonl.Unmarshal(line, &l); err != nil {
		return "", err
	}
	return key(l.ID, l.Sample), nil
}

// checkOutMode refuses to add lines of one mode to a file of another's.
func checkOutMode(out string, mode Mode) error {
	return jsonl.Scan(out, func(n int, line []byte) error {
		var l struct {
			Mode Mode `json:"mode"`
		}
		if err := jsonl.Unmarshal(line, &l); err != nil {
			return errkind.Wrap(errkind.Input, err)
		}
		if l.Mode != mode {
			return errkind.New(errkind.Input, fmt.Sprintf("a line of mode %q, not %q: one output file holds one mode; give another --out", l.Mode, mode))
		}
		return nil
	})
}

// Summary is a run's result over its shard.
type Summary struct {
	Mode  Mode   `json:"mode"`
	Model string `json:"model"`
	// Problems is the number of problems with at least one sample
	// scored; Samples the number of samples scored.
	Problems int `json:"problems"`
	Samples  int `json:"samples"`
	Correct  int `json:"correct"`
	// PassAt maps k to pass@k (a fraction, not a percentage), the mean
	// over the problems with at least k samples of the unbiased
	// estimator; PassAt1StdErr is the standard error of pass@1's mean
	// over problems.
	PassAt        map[string]float64 `json:"pass_at"`
	PassAt1StdErr float64            `json:"pass_at_1_stderr"`
	// Verdicts counts the samples by verdict.
	Verdicts map[string]int `json:"verdicts"`
	// MeanCompletionTokens is the tokens per answer (CWM's cost
	// argument); MeanPromptTokens those of the prompt.
	MeanCompletionTokens float64 `json:"mean_completion_tokens"`
	MeanPromptTokens     float64 `json:"mean_prompt_tokens"`
	TokensEstimated      bool    `json:"tokens_estimated"`
	// Missing counts the samples of the shard not in the output (model
	// errors, an interrupted run).
	Missing     int     `json:"missing"`
	ModelErrors int     `json:"model_errors"`
	Resumed     int     `json:"resumed"`
	Retries     int     `json:"retries"`
	Seconds     float64 `json:"seconds"`
	// PerProblem holds each problem's correct samples out of its samples.
	PerProblem map[string][2]int `json:"per_problem"`
	// CountEcho is how pass@k counted the samples that repeat the call.
	CountEcho passk.Echo `json:"count_echo"`
}

// Summarize reads the lines of out of mode whose keys are in want (all
// of them when want is nil) and computes the summary, an echo of the call
// counting as a wrong sample.
func Summarize(out string, mode Mode, want map[string]bool) (*Summary, error) {
	return SummarizeEcho(out, mode, want, passk.EchoWrong)
}

// SummarizeEcho is Summarize with the echo convention given.
func SummarizeEcho(out string, mode Mode, want map[string]bool, echo passk.Echo) (*Summary, error) {
	if echo == "" {
		echo = passk.EchoWrong
	}
	sum := &Summary{Mode: mode, PassAt: map[string]float64{}, Verdicts: map[string]int{}, PerProblem: map[string][2]int{}, CountEcho: echo}
	echoed := map[string]int{}
	seen := map[string]bool{}
	var promptTok, complTok int64
	var model string
	err := jsonl.Decode(out, func(_ int, l Line) error {
		k := key(l.ID, l.Sample)
		if want != nil && !want[k] || seen[k] || l.Mode != mode {
			return nil
		}
		seen[k] = true
		model = l.Model
		sum.Samples++
		sum.Verdicts[string(l.Verdict)]++
		if l.Correct {
			sum.Correct++
		}
		if l.Verdict == CallEchoed {
			echoed[l.ID]++
		}
		pp := sum.PerProblem[l.ID]
		pp[1]++
		if l.Correct {
			pp[0]++
		}
		sum.PerProblem[l.ID] = pp
		promptTok += l.PromptTokens
		complTok += l.CompletionTokens
		sum.TokensEstimated = sum.TokensEstimated || l.TokensEstimated
		sum.Retries += l.Retries
		return nil
	})
	if err != nil {
		return nil, err
	}
	if want != nil {
		sum.Missing = len(want) - len(seen)
	}
	if sum.Model == "" {
		sum.Model = model
	}
	sum.Problems = len(sum.PerProblem)
	if sum.Samples > 0 {
		sum.MeanPromptTokens = float64(promptTok) / float64(sum.Samples)
		sum.MeanCompletionTokens = float64(complTok) / float64(sum.Samples)
	}
	maxN := 0
	for _, cn := range sum.PerProblem {
		maxN = max(maxN, cn[1])
	}
	ids := problemOrder(sum.PerProblem)
	for _, k := range []int{1, 5, 10, maxN} {
		if k > maxN || k < 1 {
			continue
		}
		var xs []float64
		for _, id := range ids {
			if cn := sum.PerProblem[id]; cn[1] >= k {
				n, c := passk.Samples(cn[1], cn[0], echoed[id], echo)
				xs = append(xs, passk.Estimate(n, c, k))
			}
		}
		m, se := meanStdErr(xs)
		sum.PassAt[strconv.Itoa(k)] = m
		if k == 1 {
			sum.PassAt1StdErr = se
		}
	}
	return sum, nil
}

// Write prints the summary for people.
func (s *Summary) Write(w io.Writer) {
	fmt.Fprintf(w, "cruxeval %s", s.Mode)
	if s.Model != "" {
		fmt.Fprintf(w, " (%s)", s.Model)
	}
	fmt.Fprintf(w, ": %d problems, %d samples, %d correct\n", s.Problems, s.Samples, s.Correct)
	ks := make([]int, 0, len(s.PassAt))
	for k := range s.PassAt {
		n, _ := strconv.Atoi(k)
		ks = append(ks, n)
	}
	sort.Ints(ks)
	var parts []string
	for _, k := range ks {
		p := fmt.Sprintf("pass@%d %.1f%%", k, 100*s.PassAt[strconv.Itoa(k)])
		if k == 1 {
			p += fmt.Sprintf(" (± %.1f)", 100*s.PassAt1StdErr)
		}
		parts = append(parts, p)
	}
	if len(parts) > 0 {
		if s.CountEcho == passk.EchoDrop {
			parts = append(parts, "answers repeating the call dropped (CruxEval's script)")
		}
		fmt.Fprintln(w, strings.Join(parts, ", "))
	}
	est := ""
	if s.TokensEstimated {
		est = " (some estimated as bytes/4)"
	}
	fmt.Fprintf(w, "tokens per answer %.1f, per prompt %.1f%s\n", s.MeanCompletionTokens, s.MeanPromptTokens, est)
	fmt.Fprintf(w, "verdicts: %s\n", batch.FormatCounts(s.Verdicts))
	if s.Resumed > 0 || s.Missing > 0 || s.ModelErrors > 0 || s.Retries > 0 {
		fmt.Fprintf(w, "resumed %d, missing %d, model errors %d, retries %d\n", s.Resumed, s.Missing, s.ModelErrors, s.Retries)
	}
	if s.Seconds > 0 {
		fmt.Fprintf(w, "took %.1fs\n", s.Seconds)
	}
}
