package selection

import (
	"context"
	"fmt"
	"sort"
)

// HybridScore is one candidate as R2E-Gym's hybrid sees it. Regression
// and Testgen are counts here (regression tests passed, kept generated
// tests passed) where R2E-Gym has rates; over one task's candidates the
// denominators are the same, so every comparison is the same.
type HybridScore struct {
	Regression float64
	Testgen    float64
	PYes       float64
}

// HybridFinalists is R2E-Gym's get_hybrid_aggregation
// (reproduction/verifier_evals.ipynb) up to its final mean: the
// positions in cands (given in the order R2E-Gym's sample_indices would
// list them) of the candidates it averages the outcome over. Its steps:
// sort by (P(YES), regression, testgen), highest first, stably (Python's
// sort with reverse=True keeps equal keys in input order), and keep the
// first max(3, n/2); of those keep the highest regression, then the
// highest testgen, then the highest P(YES). Only the first cut depends
// on the order: among candidates equal in all three, the earlier enter.
// The positions are returned in increasing order.
func HybridFinalists(cands []HybridScore) []int {
	if len(cands) == 0 {
		return nil
	}
	pos := make([]int, len(cands))
	for i := range pos {
		pos[i] = i
	}
	sort.SliceStable(pos, func(a, b int) bool {
		x, y := cands[pos[a]], cands[pos[b]]
		if x.PYes != y.PYes {
			return x.PYes > y.PYes
		}
		if x.Regression != y.Regression {
			return x.Regression > y.Regression
		}
		return x.Testgen > y.Testgen
	})
	top := max(3, len(cands)/2)
	if top < len(pos) {
		pos = pos[:top]
	}
	for _, key := range []func(HybridScore) float64{
		func(c HybridScore) float64 { return c.Regression },
		func(c HybridScore) float64 { return c.Testgen },
		func(c HybridScore) float64 { return c.PYes },
	} {
		best := key(cands[pos[0]])
		for _, p := range pos[1:] {
			best = max(best, key(cands[p]))
		}
		kept := pos[:0]
		for _, p := range pos {
			if key(cands[p]) == best {
				kept = append(kept, p)
			}
		}
		pos = kept
	}
	sort.Ints(pos)
	return pos
}

// hybrid is R2E-Gym's hybrid on the candidates s.cands[idx] (cands):
// every eligible candidate's complete regression run, kept tests passed
// (generated, by class) and P(YES) go through HybridFinalists in input
// order. It returns the pick (an index into cands: of the finalists, the
// first in best@k's tie order), the finalists (indexes into s.cands) and
// why.
func (s *selection) hybrid(ctx context.Context, cands []Candidate, eligible []bool, generated map[string]int, idx []int) (int, []int, string, error) {
	var pos []int
	var scores []HybridScore
	for j, c := range cands {
		if !eligible[j] {
			continue
		}
		reg := 0
		if len(s.regIDs) > 0 {
			run, err := s.reg.run(ctx, c.Class, 0)
			if err != nil {
				return -1, nil, "", err
			}
			reg = run.Passed
		}
		p, err := s.verify(ctx, idx[j])
		if err != nil {
			return -1, nil, "", err
		}
		pos = append(pos, j)
		scores = append(scores, HybridScore{Regression: float64(reg), Testgen: float64(generated[c.Class]), PYes: p})
	}
	if len(pos) == 0 {
		return -1, nil, "", nil
	}
	fin := HybridFinalists(scores)
	votes := Votes(cands)
	win := pos[fin[0]]
	finalists := make([]int, len(fin))
	for n, f := range fin {
		finalists[n] = idx[pos[f]]
		if before(cands, votes, pos[f], win) {
			win = pos[f]
		}
	}
	w := scores[fin[0]]
	for _, f := range fin {
		if pos[f] == win {
			w = scores[f]
		}
	}
	why := fmt.Sprintf("R2E-Gym's hybrid: of the %d highest P(YES) of %d, the most regression tests passed (%d), then kept tests (%d), then P(YES) (%.3f)",
		min(len(pos), max(3, len(pos)/2)), len(pos), int(w.Regression), int(w.Testgen), w.PYes)
	if len(fin) > 1 {
		why += fmt.Sprintf("; %d candidates tied there, the first by votes, tokens and order", len(fin))
	}
	return win, finalists, why, nil
}
