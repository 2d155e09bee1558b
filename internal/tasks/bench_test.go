package tasks

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"cwm/internal/envbuild"
	"cwm/internal/jsonl"
)

// BenchmarkValidation compares the time per verified task of cwm's
// pipeline (the test-to-code map picks the covering tests and drops
// mutants no test executes; buggy trees run only FAIL_TO_PASS; the gold
// tree, which is the environment's own, is run twice per session) with
// validating every candidate with the whole suite at every step, on
// testdata/ledger, whose suite takes over 5 seconds. Both take the same
// candidates in the same order, alternately, in the same run:
//
//	go test ./internal/tasks -run '^$' -bench Validation -benchtime 1x
func BenchmarkValidation(b *testing.B) {
	e := buildEnv(b, envbuild.Options{Source: "testdata/ledger"})
	if e.Runs[0].Seconds < 5 {
		b.Fatalf("the ledger suite took %.1fs, want at least 5s", e.Runs[0].Seconds)
	}
	ctx := context.Background()
	perTask := map[bool][]float64{}
	for i := 0; i < b.N; i++ {
		for _, full := range []bool{i%2 == 1, i%2 == 0} {
			out := filepath.Join(b.TempDir(), fmt.Sprintf("tasks-%v.jsonl", full))
			t0 := time.Now()
			sum, err := Mutate(ctx, testSandboxes, e, MutateOptions{Out: out, Max: 12, PerFunction: 1, Seed: 3,
				Workers: 2, FullSuite: full})
			if err != nil {
				b.Fatal(err)
			}
			secs := time.Since(t0).Seconds()
			if sum.Written == 0 {
				b.Fatalf("full=%v: no task verified", full)
			}
			perTask[full] = append(perTask[full], secs/float64(sum.Written))
			stages := map[string]float64{}
			if err := jsonl.Decode(decisionsPath(out), func(_ int, d decision) error {
				for k, v := range d.Stages {
					stages[k] += v
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			b.Logf("full suite=%v: %d tasks in %.1fs (%.2fs per task; session gold runs %.1fs; stage totals %v), rejected %v",
				full, sum.Written, secs, secs/float64(sum.Written), sum.GoldSeconds, stages, sum.Rejected)
		}
	}
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	m, f := mean(perTask[false]), mean(perTask[true])
	b.ReportMetric(m, "map_s/task")
	b.ReportMetric(f, "fullsuite_s/task")
	b.ReportMetric(m/f, "ratio")
	if m/f > 0.3 {
		b.Errorf("time per verified task %.2fs is %.2fx the full-suite strategy's %.2fs, want at most 0.3x", m, m/f, f)
	}
}
