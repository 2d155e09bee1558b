package tracer

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cwm/internal/sandbox"
)

// BenchmarkProgThroughput traces the runs of testdata/prog/problems.jsonl
// that end (the endless problem left out) on the shared pool (2 workers),
// and, in the same run, a baseline that runs the same programs on the same
// inputs untraced with a fresh python3 per run, as a judge does, in two
// sandboxes at a time. Run with:
//
//	go test ./internal/tracer -run '^$' -bench ProgThroughput -benchtime 5x
func BenchmarkProgThroughput(b *testing.B) {
	probs, err := ReadProblems(filepath.Join("testdata", "prog", "problems.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	all, err := ProgRuns(probs, ProgSelect{})
	if err != nil {
		b.Fatal(err)
	}
	var runs []ProgRun
	for _, r := range all {
		if r.Solution >= 0 && r.Problem.Name != "endless" {
			runs = append(runs, r)
		}
	}
	p := testPool(b)
	ctx := context.Background()
	each := func(workers int, fn func(w int, r ProgRun)) {
		var wg sync.WaitGroup
		next := make(chan ProgRun)
		for w := range workers {
			wg.Go(func() {
				for r := range next {
					fn(w, r)
				}
			})
		}
		for _, r := range runs {
			next <- r
		}
		close(next)
		wg.Wait()
	}
	each(2, func(_ int, r ProgRun) { traceRun(ctx, p, r) }) // warm the runners
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		each(2, func(_ int, r ProgRun) {
			if rec := traceRun(ctx, p, r); rec.Verdict == VerdictError || rec.Verdict == VerdictTimeout {
				b.Errorf("%s: %s %s", rec.ID, rec.Verdict, rec.Reason)
			}
		})
	}
	pool := float64(b.N*len(runs)) / time.Since(start).Seconds()
	b.StopTimer()
	var sbs [2]*sandbox.Sandbox
	for i := range sbs {
		sb, err := testRuntime(b).New(ctx, sandbox.Config{Workdir: "/tmp"})
		if err != nil {
			b.Fatal(err)
		}
		defer sb.Close()
		sbs[i] = sb
	}
	start = time.Now()
	each(2, func(w int, r ProgRun) {
		t := r.Problem.tests(r.Kind)
		res, err := sbs[w].Exec(ctx, sandbox.Cmd{Args: []string{"/usr/bin/python3", "-c", r.Problem.Solutions.Solution[r.Solution]},
			Stdin: strings.NewReader(t.Input[r.Test]), Timeout: 30 * time.Second})
		if err != nil || res.Reason != sandbox.ReasonNone {
			b.Errorf("baseline %s: %v %s", r.ID(), err, res.Describe())
		}
	})
	base := float64(len(runs)) / time.Since(start).Seconds()
	b.ReportMetric(pool, "runs/s")
	b.ReportMetric(base, "baseline-runs/s")
	b.ReportMetric(pool/base, "speedup")
}
