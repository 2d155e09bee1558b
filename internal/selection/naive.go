package selection

import (
	"context"
)

// naivePhase is the naive procedure's execution, the benchmark's
// baseline: every non-empty candidate, in a fresh sandbox of its own, runs
// every generated test that has code and then the whole regression set.
// A class's results are its first candidate's, as in the selection, so
// that both pick the same patch; the rest is the work the selection saves
// (once per class, reproducing tests only, early stopping).
func (s *selection) naivePhase(ctx context.Context, res *Result) error {
	for i, c := range s.in.Cands {
		cl := s.cands[i].Class
		if cl == "" {
			continue
		}
		sb, how, err := s.tr.patched(ctx, c.Patch)
		if err != nil {
			return err
		}
		first := s.repIndex[cl] == i
		if first {
			s.applied[cl] = string(how)
		}
		if sb == nil {
			continue
		}
		verdicts, _, err := s.tr.runGenerated(ctx, sb, res.Tests)
		if err == nil {
			var passed map[string]bool
			if passed, _, err = s.tr.runTests(ctx, sb, s.regIDs, 0); err == nil && first {
				s.reg.runs[cl] = RegressionRun{Passed: len(passed), Complete: true}
			}
		}
		sb.Close()
		if err != nil {
			return err
		}
		if first {
			p, v := make([]bool, len(res.Tests)), make([]Verdict, len(res.Tests))
			for t, verdict := range verdicts {
				// Only reproducing tests count for the pick, as in the
				// selection; the others ran for nothing.
				if res.Tests[t].Reproduces() {
					p[t], v[t] = verdict == Resolved, verdict
				}
			}
			s.passes[cl], s.verdicts[cl] = p, v
		}
	}
	return nil
}
