package eval

import (
	"fmt"
	"io"
	"strconv"

	"cwm/internal/jsonl"
)

// Rates are state, action and both exact-match rates.
type Rates struct {
	State  float64 `json:"state"`
	Action float64 `json:"action"`
	Both   float64 `json:"both"`
}

// FidelitySummary is a fidelity run's result.
type FidelitySummary struct {
	Model string `json:"model"`
	// Traces is the number of whole-trace predictions; Strict, Valid and
	// Output the shares that parse strictly, have no format errors, and
	// end main as the truth does.
	Traces int     `json:"traces"`
	Strict float64 `json:"strict"`
	Valid  float64 `json:"valid"`
	Output float64 `json:"output"`
	// Positional and Aligned are per-step exact-match rates over all
	// positions of all traces (micro averages).
	Positional Rates `json:"positional"`
	Aligned    Rates `json:"aligned"`
	// ByDecile, ByRange and ByKind are the aligned both-match rates of
	// the true frames by tenth of the trace and by absolute step, and the
	// exact rate of values by kind, with their counts.
	ByDecile [10]Counts        `json:"by_decile"`
	ByRange  map[string]Counts `json:"by_range"`
	ByKind   map[string]Counts `json:"by_kind"`
	// Next is teacher-forced next-frame prediction: Steps predicted,
	// NextValid the share that was one well-formed frame, NextRates
	// the matches.
	Steps     int     `json:"steps"`
	NextValid float64 `json:"next_valid"`
	Next      Rates   `json:"next"`
	// MeanCompletionTokens is per whole trace; NextTokens per frame.
	MeanCompletionTokens float64 `json:"mean_completion_tokens"`
	NextTokens           float64 `json:"next_tokens"`
	Missing              int     `json:"missing"`
	ModelErrors          int     `json:"model_errors"`
	Resumed              int     `json:"resumed"`
	Seconds              float64 `json:"seconds"`
}

// SummarizeFidelity computes the summary of the lines of out whose keys
// are in want (all of them when want is nil).
func SummarizeFidelity(out string, want map[string]bool) (*FidelitySummary, error) {
	s := &FidelitySummary{ByRange: map[string]Counts{}, ByKind: map[string]Counts{}}
	seen := map[string]bool{}
	var strict, valid, output, nvalid int
	var pos, ali StepMatch
	var st, ac, both int
	var tok, ntok int64
	err := jsonl.Decode(out, func(_ int, l FidelityLine) error {
		k := fitem{&TraceRecord{ID: l.ID}, l.Task, l.Step}.key()
		if want != nil && !want[k] || seen[k] {
			return nil
		}
		seen[k] = true
		s.Model = l.Model
		if l.Task == "next" {
			s.Steps++
			ntok += l.CompletionTokens
			if l.Valid {
				nvalid++
			}
			if l.StateMatch {
				st++
			}
			if l.ActionMatch {
				ac++
			}
			if l.StateMatch && l.ActionMatch {
				both++
			}
			return nil
		}
		s.Traces++
		tok += l.CompletionTokens
		for _, b := range []struct {
			ok bool
			n  *int
		}{{l.Strict, &strict}, {l.Valid, &valid}, {l.OutputMatch, &output}} {
			if b.ok {
				*b.n++
			}
		}
		pos.add(l.Positional)
		ali.add(l.Aligned)
		for d := range l.ByDecile {
			s.ByDecile[d].Match += l.ByDecile[d].Match
			s.ByDecile[d].Total += l.ByDecile[d].Total
		}
		for r, c := range l.ByRange {
			x := s.ByRange[RangeNames[r]]
			x.Match, x.Total = x.Match+c.Match, x.Total+c.Total
			s.ByRange[RangeNames[r]] = x
		}
		for k, c := range l.ByKind {
			x := s.ByKind[k]
			x.Match, x.Total = x.Match+c.Match, x.Total+c.Total
			s.ByKind[k] = x
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if want != nil {
		s.Missing = len(want) - len(seen)
	}
	if s.Traces > 0 {
		n := float64(s.Traces)
		s.Strict, s.Valid, s.Output = float64(strict)/n, float64(valid)/n, float64(output)/n
		s.MeanCompletionTokens = float64(tok) / n
		s.Positional, s.Aligned = pos.rates(), ali.rates()
	}
	if s.Steps > 0 {
		n := float64(s.Steps)
		s.NextValid = float64(nvalid) / n
		s.Next = Rates{State: float64(st) / n, Action: float64(ac) / n, Both: float64(both) / n}
		s.NextTokens = float64(ntok) / n
	}
	return s, nil
}

func (m *StepMatch) add(o StepMatch) {
	m.State += o.State
	m.Action += o.Action
	m.Both += o.Both
	m.Positions += o.Positions
}

func (m StepMatch) rates() Rates {
	if m.Positions == 0 {
		return Rates{}
	}
	n := float64(m.Positions)
	return Rates{State: float64(m.State) / n, Action: float64(m.Action) / n, Both: float64(m.Both) / n}
}

func pct(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" }

// Write prints the summary for people.
func (s *FidelitySummary) Write(w io.Writer) {
	if s.Traces > 0 {
		fmt.Fprintf(w, "fidelity (%s): %d traces predicted whole: strict format %s, valid %s, output correct %s\n",
			s.Model, s.Traces, pct(s.Strict), pct(s.Valid), pct(s.Output))
		fmt.Fprintf(w, "  per step by position: state %s, action %s, both %s\n", pct(s.Positional.State), pct(s.Positional.Action), pct(s.Positional.Both))
		fmt.Fprintf(w, "  per step aligned:     state %s, action %s, both %s\n", pct(s.Aligned.State), pct(s.Aligned.Action), pct(s.Aligned.Both))
		fmt.Fprint(w, "  by tenth of the trace:")
		for _, c := range s.ByDecile {
			fmt.Fprintf(w, " %s", pct(c.Rate()))
		}
		fmt.Fprintln(w)
		fmt.Fprint(w, "  by value kind:")
		for _, k := range ValueKinds {
			if c, ok := s.ByKind[k]; ok {
				fmt.Fprintf(w, " %s %s (%d)", k, pct(c.Rate()), c.Total)
			}
		}
		fmt.Fprintf(w, "\n  tokens per trace %.1f\n", s.MeanCompletionTokens)
	}
	if s.Steps > 0 {
		fmt.Fprintf(w, "teacher-forced next frame: %d steps, valid %s, state %s, action %s, both %s, tokens per frame %.1f\n",
			s.Steps, pct(s.NextValid), pct(s.Next.State), pct(s.Next.Action), pct(s.Next.Both), s.NextTokens)
	}
	if s.Missing > 0 || s.ModelErrors > 0 || s.Resumed > 0 {
		fmt.Fprintf(w, "resumed %d, missing %d, model errors %d\n", s.Resumed, s.Missing, s.ModelErrors)
	}
}
