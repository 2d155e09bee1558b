package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"cwm/internal/jsonl"
	"cwm/internal/selection"
)

// SelectSection is one `cwm select` output file: the tasks' mean curves
// over k and a row per task.
type SelectSection struct {
	File   string
	Method string
	// Curve is the mean of the tasks' curves (selection.MeanCurve);
	// Hybrid is set when some point has a hybrid figure.
	Curve  []selection.Point
	Hybrid bool
	// Resolved counts tasks whose chosen patch is resolved, of Graded.
	Resolved, Graded int
	NoWinner         int
	Rows             []SelectRow
}

// SelectRow is one task of a select output.
type SelectRow struct {
	ID, Method, Why string
	// Winner is the chosen candidate (-1: none).
	Winner               int
	Candidates, Classes  int
	Kept                 int
	Reproducing, Dropped int
	// Scores lists each candidate's score as "#index score" (a dash for
	// one never scored: empty, not applying, or stopped before scoring),
	// with a check mark when the hidden tests resolve it.
	Scores string
	// Resolved is the hidden tests' verdict on the pick ("" ungraded).
	Resolved string
}

func (r *Report) addSelect(name, path string, in *Input) error {
	sec := SelectSection{File: name}
	var curves [][]selection.Point
	methods := map[string]bool{}
	err := jsonl.Decode(path, func(_ int, l selection.Line) error {
		in.Lines++
		if l.Result == nil {
			return nil
		}
		methods[string(l.Method)] = true
		if l.Curve != nil {
			curves = append(curves, l.Curve)
		}
		if l.Winner < 0 {
			sec.NoWinner++
		}
		row := SelectRow{ID: l.InstanceID, Method: string(l.Method), Why: l.Why, Winner: l.Winner,
			Candidates: len(l.Candidates), Classes: l.Classes, Kept: len(l.Kept),
			Reproducing: l.Reproducing, Dropped: l.Irrelevant + l.Broken, Scores: candidateScores(l.Candidates)}
		if l.Resolved != nil {
			sec.Graded++
			row.Resolved = "no"
			if *l.Resolved {
				sec.Resolved++
				row.Resolved = "yes"
			}
		}
		if len(sec.Rows) < MaxTableRows {
			sec.Rows = append(sec.Rows, row)
		}
		return nil
	})
	if err != nil {
		return err
	}
	ms := make([]string, 0, len(methods))
	for m := range methods {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	sec.Method = strings.Join(ms, ",")
	if len(curves) > 0 {
		sec.Curve = selection.MeanCurve(curves)
	}
	for _, p := range sec.Curve {
		sec.Hybrid = sec.Hybrid || p.Hybrid != nil
	}
	r.Select = append(r.Select, sec)
	return nil
}

// candidateScores formats the candidates' scores for the task table.
func candidateScores(cands []selection.CandidateResult) string {
	parts := make([]string, 0, len(cands))
	for _, c := range cands {
		s := "-"
		if c.Scored != nil && c.Scored.Score != nil {
			s = strconv.Itoa(*c.Scored.Score)
		}
		if c.Resolved != nil && *c.Resolved {
			s += " ✓"
		}
		parts = append(parts, fmt.Sprintf("#%d %s", c.Index, s))
	}
	return strings.Join(parts, ", ")
}

// selectSeries are a select file's curves as plot series: pass@k,
// majority@k, best@k and, when present, hybrid.
func selectSeries(s SelectSection) []Series {
	get := []struct {
		name string
		f    func(selection.Point) *float64
	}{
		{"pass@k", func(p selection.Point) *float64 { return &p.Pass }},
		{"majority@k", func(p selection.Point) *float64 { return &p.Majority }},
		{"best@k", func(p selection.Point) *float64 { return &p.Best }},
		{"hybrid@k", func(p selection.Point) *float64 { return p.Hybrid }},
		{"best-verifier@k", func(p selection.Point) *float64 { return p.BestVerifier }},
	}
	var out []Series
	for _, g := range get {
		sr := Series{Name: g.name}
		for _, p := range s.Curve {
			if v := g.f(p); v != nil {
				sr.Points = append(sr.Points, XY{X: float64(p.K), Y: *v})
			}
		}
		if len(sr.Points) > 0 {
			out = append(out, sr)
		}
	}
	return out
}
