package selection

import (
	"context"
	"fmt"
	"sort"
)

// Candidate is one of a task's k patches as the pick sees it.
type Candidate struct {
	// Class is the candidate's equivalence class: its Normalise form, ""
	// for a patch that changes nothing (such a candidate never wins).
	Class string
	// Tokens is what the candidate cost: its trajectory's completion
	// tokens, or its patch's bytes/4 when it has no trajectory.
	Tokens int64
}

// Votes counts the candidates of each non-empty class.
func Votes(cands []Candidate) map[string]int {
	v := map[string]int{}
	for _, c := range cands {
		if c.Class != "" {
			v[c.Class]++
		}
	}
	return v
}

// before is the tie order between two candidates of equal score: more
// votes for its class, then fewer tokens, then the earlier one (lower
// index), so that every pick is deterministic.
func before(cands []Candidate, votes map[string]int, a, b int) bool {
	ca, cb := cands[a], cands[b]
	if va, vb := votes[ca.Class], votes[cb.Class]; va != vb {
		return va > vb
	}
	if ca.Tokens != cb.Tokens {
		return ca.Tokens < cb.Tokens
	}
	return a < b
}

// Majority is majority@k: the candidate whose class has the most votes
// (ties: fewer tokens, then the earlier candidate), with no execution; -1
// when every candidate is empty.
func Majority(cands []Candidate) int {
	votes := Votes(cands)
	win := -1
	for i, c := range cands {
		if c.Class == "" {
			continue
		}
		if win < 0 || before(cands, votes, i, win) {
			win = i
		}
	}
	return win
}

// RegressionRun is the regression set's outcome for one class: how many
// of its tests passed, and whether the run went to the end (false: it
// stopped at its failure limit, so Passed is a lower bound).
type RegressionRun struct {
	Passed   int
	Complete bool
}

// RunRegression runs the regression set on a class's representative,
// stopping once maxFail tests failed (0: no limit).
type RunRegression func(ctx context.Context, class string, maxFail int) (RegressionRun, error)

// Scored is one class's standing in a best@k pick.
type Scored struct {
	Class string `json:"-"`
	// Generated is how many kept generated tests the class passes.
	Generated int `json:"generated"`
	// Regression is how many regression tests it passed (a lower bound
	// when the run stopped), nil when it was never run.
	Regression *int `json:"regression"`
	// Score is Generated+Regression when the run was complete.
	Score *int `json:"score"`
	// Stopped says why the class was not run to the end.
	Stopped string `json:"stopped,omitempty"`
}

// BestInput is what best@k picks from.
type BestInput struct {
	Cands []Candidate
	// Eligible marks the candidates that may win: not empty, and their
	// patch applied.
	Eligible []bool
	// Generated is, per class, how many of the kept generated tests it
	// passes.
	Generated map[string]int
	// RegressionSize is the number of regression tests.
	RegressionSize int
	// Run runs the regression set; nil when RegressionSize is 0.
	Run RunRegression
	// Exhaustive runs every class's regression set to the end (the naive
	// procedure, for comparison).
	Exhaustive bool
}

// BestResult is a best@k pick: the winner (-1 when no candidate is
// eligible), the standing of every eligible class, and why the winner
// won.
type BestResult struct {
	Winner  int
	Classes map[string]*Scored
	Why     string
}

// Best is best@k: the eligible candidate with the most tests passed (kept
// generated tests plus regression tests), ties broken by the votes for
// its class, then fewer tokens, then the earlier candidate.
//
// The regression set runs once per class, in the tie order of its
// generated score (best first), and a class's run stops as soon as it
// cannot win: with F failures a class scores at most Generated+R-F, so
// once that falls below the best complete score so far its run stops
// (maxFail = Generated+R-best+1), and a class whose upper bound is
// already below it does not run at all. A class may still tie the best,
// since ties go to votes.
func Best(ctx context.Context, in BestInput) (BestResult, error) {
	res := BestResult{Winner: -1, Classes: map[string]*Scored{}}
	votes := Votes(in.Cands)
	// The representative of a class is its first candidate in tie order.
	rep := map[string]int{}
	for i, c := range in.Cands {
		if !in.Eligible[i] {
			continue
		}
		if r, ok := rep[c.Class]; !ok || before(in.Cands, votes, i, r) {
			rep[c.Class] = i
		}
	}
	order := make([]string, 0, len(rep))
	for cl := range rep {
		order = append(order, cl)
	}
	sort.Slice(order, func(a, b int) bool {
		ga, gb := in.Generated[order[a]], in.Generated[order[b]]
		if ga != gb {
			return ga > gb
		}
		return before(in.Cands, votes, rep[order[a]], rep[order[b]])
	})
	best := -1
	for _, cl := range order {
		s := &Scored{Class: cl, Generated: in.Generated[cl]}
		res.Classes[cl] = s
		ub := s.Generated + in.RegressionSize
		if !in.Exhaustive && res.Winner >= 0 && ub < best {
			s.Stopped = fmt.Sprintf("not run: at most %d tests, the best has %d", ub, best)
			continue
		}
		run := RegressionRun{Complete: true}
		if in.RegressionSize > 0 {
			maxFail := 0
			if !in.Exhaustive && res.Winner >= 0 {
				maxFail = ub - best + 1
			}
			var err error
			if run, err = in.Run(ctx, cl, maxFail); err != nil {
				return res, err
			}
			s.Regression = &run.Passed
			if !run.Complete {
				s.Stopped = fmt.Sprintf("stopped after %d regression failures: at most %d tests, the best has %d", maxFail, ub-maxFail, best)
				continue
			}
		} else {
			zero := 0
			s.Regression = &zero
		}
		score := s.Generated + run.Passed
		s.Score = &score
		if res.Winner < 0 || score > best || score == best && before(in.Cands, votes, rep[cl], res.Winner) {
			res.Winner, best = rep[cl], score
		}
	}
	if res.Winner >= 0 {
		res.Why = why(in, votes, res, best)
	}
	return res, nil
}

// why says what decided a pick: the score alone, or which tie rule.
func why(in BestInput, votes map[string]int, res BestResult, best int) string {
	w := in.Cands[res.Winner]
	ws := res.Classes[w.Class]
	next, tied := -1, 0
	var sameVotes, sameTokens bool
	for cl, s := range res.Classes {
		if cl == w.Class || s.Score == nil {
			continue
		}
		if *s.Score != best {
			next = max(next, *s.Score)
			continue
		}
		tied++
		if votes[cl] == votes[w.Class] {
			sameVotes = true
			for i, c := range in.Cands {
				if c.Class == cl && in.Eligible[i] && c.Tokens == w.Tokens {
					sameTokens = true
				}
			}
		}
	}
	passed := fmt.Sprintf("%d tests passed (%d generated, %d regression)", best, ws.Generated, best-ws.Generated)
	switch {
	case tied == 0 && next < 0 && len(res.Classes) == 1:
		return "the only eligible patch: " + passed
	case tied == 0 && next < 0:
		return "most tests passed: " + passed + "; the others were stopped once they could not reach it"
	case tied == 0:
		return fmt.Sprintf("most tests passed: %s; the next best passed %d", passed, next)
	case !sameVotes:
		return fmt.Sprintf("%s, tied with %d other patches; most votes (%d)", passed, tied, votes[w.Class])
	case !sameTokens:
		return fmt.Sprintf("%s and %d votes, tied with other patches; fewest tokens (%d)", passed, votes[w.Class], w.Tokens)
	}
	return fmt.Sprintf("%s, %d votes and %d tokens, tied with other patches; first in input order", passed, votes[w.Class], w.Tokens)
}
