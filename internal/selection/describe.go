package selection

import (
	"context"
	"fmt"
	"sort"

	"cwm/internal/passk"
	"cwm/internal/reward"
)

// describe fills the per-candidate part of res from the pick on all
// candidates.
func (s *selection) describe(res *Result, p picked) {
	votes := Votes(s.cands)
	// Classes are numbered in order of their first candidate.
	num := map[string]int{}
	for _, c := range s.cands {
		if _, ok := num[c.Class]; !ok && c.Class != "" {
			num[c.Class] = len(num)
		}
	}
	res.Classes = len(num)
	for i, c := range s.cands {
		cr := CandidateResult{Index: i, Sample: s.in.Cands[i].Sample, Tokens: c.Tokens, Empty: c.Class == "", Class: -1}
		if c.Class != "" {
			cr.Class, cr.Votes, cr.Apply = num[c.Class], votes[c.Class], s.applied[c.Class]
			if v := s.verdicts[c.Class]; v != nil {
				for _, t := range p.kept {
					cr.Generated = append(cr.Generated, v[t])
				}
			}
			cr.Scored = p.best.Classes[c.Class]
			if py, ok := s.pyes[s.verifyKey(i)]; ok {
				cr.PYes = &py
			}
		}
		res.Candidates = append(res.Candidates, cr)
	}
}

// curves grades every distinct candidate patch with the hidden tests and
// computes the task's curve: pass@k exactly, majority@k and best@k as
// the mean over the k-subsets of Subsets. Regression runs a subset needs
// beyond what the selection ran happen here, still without hidden tests.
func (s *selection) curves(ctx context.Context, res *Result) error {
	graded := map[string]bool{}
	resolved := make([]bool, len(s.cands))
	correct := 0
	for i, c := range s.in.Cands {
		if s.cands[i].Class == "" {
			// Empty patches are never resolved: the unpatched tree fails
			// FAIL_TO_PASS by the task's construction.
			f := false
			res.Candidates[i].Resolved = &f
			continue
		}
		ok, done := graded[c.Patch]
		if !done {
			r, err := reward.Grade(ctx, s.tr.sbs, s.in.Env, s.in.Task, c.Patch)
			if err != nil {
				return fmt.Errorf("grade candidate %d: %w", i, err)
			}
			ok = r.Resolved
			graded[c.Patch] = ok
		}
		resolved[i] = ok
		res.Candidates[i].Resolved = &resolved[i]
		if ok {
			correct++
		}
	}
	if res.Winner >= 0 {
		res.Resolved = &resolved[res.Winner]
	} else {
		f := false
		res.Resolved = &f
	}
	n := len(s.cands)
	for _, k := range Ks(n) {
		pt := Point{K: k, Pass: passk.Estimate(n, correct, k)}
		subsets := Subsets(n, k, s.in.Task.InstanceID)
		for _, sub := range subsets {
			p, err := s.pick(ctx, sub)
			if err != nil {
				return err
			}
			if p.majority >= 0 && resolved[p.majority] {
				pt.Majority++
			}
			if p.best.Winner >= 0 && resolved[p.best.Winner] {
				pt.Best++
			}
			switch s.cfg.Method {
			case MethodHybrid:
				// R2E-Gym's expectation over the finalists' tie.
				r := 0
				for _, f := range p.finalists {
					if resolved[f] {
						r++
					}
				}
				if len(p.finalists) > 0 {
					addTo(&pt.Hybrid, float64(r)/float64(len(p.finalists)))
				} else {
					addTo(&pt.Hybrid, 0)
				}
			case MethodBestVerifier:
				addTo(&pt.BestVerifier, boolFloat(p.verifier >= 0 && resolved[p.verifier]))
			}
		}
		pt.Subsets = len(subsets)
		pt.Majority /= float64(len(subsets))
		pt.Best /= float64(len(subsets))
		divide(pt.Hybrid, float64(len(subsets)))
		divide(pt.BestVerifier, float64(len(subsets)))
		res.Curve = append(res.Curve, pt)
	}
	return nil
}

// MeanCurve averages tasks' curves point by point; a point averages the
// tasks that have that k.
func MeanCurve(curves [][]Point) []Point {
	type acc struct {
		p     Point
		n     int
		h, bv int // the tasks with a hybrid, a best-verifier figure
	}
	byK := map[int]*acc{}
	for _, c := range curves {
		for _, p := range c {
			a := byK[p.K]
			if a == nil {
				a = &acc{p: Point{K: p.K}}
				byK[p.K] = a
			}
			a.n++
			a.p.Pass += p.Pass
			a.p.Majority += p.Majority
			a.p.Best += p.Best
			a.p.Subsets = max(a.p.Subsets, p.Subsets)
			if p.Hybrid != nil {
				addTo(&a.p.Hybrid, *p.Hybrid)
				a.h++
			}
			if p.BestVerifier != nil {
				addTo(&a.p.BestVerifier, *p.BestVerifier)
				a.bv++
			}
		}
	}
	var out []Point
	for _, a := range byK {
		p := a.p
		p.Pass /= float64(a.n)
		p.Majority /= float64(a.n)
		p.Best /= float64(a.n)
		divide(p.Hybrid, float64(a.h))
		divide(p.BestVerifier, float64(a.bv))
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].K < out[j].K })
	return out
}

// addTo adds x to the optional figure *f, which starts at 0.
func addTo(f **float64, x float64) {
	if *f == nil {
		*f = new(float64)
	}
	**f += x
}

// divide divides an optional figure, when there is one.
func divide(f *float64, n float64) {
	if f != nil {
		*f /= n
	}
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
