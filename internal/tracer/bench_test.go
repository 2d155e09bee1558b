package tracer

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"cwm/internal/sandbox"
)

// BenchmarkCruxEvalThroughput traces the 800 CruxEval functions with the
// shared pool (2 workers) and, in the same run, a baseline that starts a
// fresh python3 with the same tracer for every function (server.py once),
// also in sandboxes, 2 at a time. The baseline runs on the first
// baselineFuncs functions only: at ~10 functions/s the whole set would take
// minutes, and a rate is a rate. Run with:
//
//	go test ./internal/tracer -run '^$' -bench CruxEvalThroughput -benchtime 3x
func BenchmarkCruxEvalThroughput(b *testing.B) {
	const baselineFuncs = 100
	p := testPool(b)
	fs := cruxFuncs(loadCrux(b))
	ctx := context.Background()
	traceAll(ctx, p, fs[:50]) // warm the runners
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		for _, r := range traceAll(ctx, p, fs) {
			if r.Status != OK {
				b.Fatalf("%s: %s %s", r.ID, r.Status, r.Error)
			}
		}
	}
	pool := float64(b.N*len(fs)) / time.Since(start).Seconds()
	b.StopTimer()
	base := baselineRate(b, testRuntime(b), fs[:baselineFuncs])
	b.ReportMetric(pool, "funcs/s")
	b.ReportMetric(base, "baseline-funcs/s")
	b.ReportMetric(pool/base, "speedup")
	if pool < 300 || pool/base < 10 {
		b.Errorf("pool %.0f functions/s, %.1fx the fresh-python baseline; want at least 300/s and 10x", pool, pool/base)
	}
}

// baselineRate traces fs with a new python3 process per function, two
// sandboxes in parallel, and returns functions per second.
func baselineRate(b *testing.B, rt *sandbox.Runtime, fs []Func) float64 {
	ctx := context.Background()
	var sbs [2]*sandbox.Sandbox
	for i := range sbs {
		sb, err := rt.New(ctx, sandbox.Config{Workdir: "/tmp", Env: workerEnv})
		if err != nil {
			b.Fatal(err)
		}
		defer sb.Close()
		if err := installPy(ctx, sb); err != nil {
			b.Fatal(err)
		}
		sbs[i] = sb
	}
	start := time.Now()
	var wg sync.WaitGroup
	next := make(chan Func)
	for _, sb := range sbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range next {
				req, _ := json.Marshal(request{ID: f.ID, Source: Context(f.Code, f.Call), Filename: Filename, Timeout: 10})
				r, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"/usr/bin/python3", "-s", pyDir + "/_cwm_server.py", "once"},
					Stdin: bytes.NewReader(append(req, '\n'))})
				if err != nil || !r.Success() || !bytes.Contains(r.Stdout, []byte(`"status":"ok"`)) {
					b.Errorf("baseline %s: %v %s %.200s", f.ID, err, r.Describe(), r.Stdout)
				}
			}
		}()
	}
	for _, f := range fs {
		next <- f
	}
	close(next)
	wg.Wait()
	return float64(len(fs)) / time.Since(start).Seconds()
}

// BenchmarkTracerOverhead runs testdata/overhead.py in a sandbox: three
// CPU-bound pure-Python workloads, each untraced, traced by cwm's tracer
// and traced by a straightforward tracer (repr of every local and
// json.dumps on every event), in 7 interleaved rounds, CPU time. The
// requirement is per workload: cwm's traced/untraced ratio at most 0.4
// times the straightforward tracer's, measured in the same run (the median
// over the rounds of the two tracers' ratio in each round). Run with:
//
//	go test ./internal/tracer -run '^$' -bench TracerOverhead -benchtime 1x -v
func BenchmarkTracerOverhead(b *testing.B) {
	const limit = 0.4
	ctx := context.Background()
	sb, err := testRuntime(b).New(ctx, sandbox.Config{Workdir: "/tmp", Env: workerEnv})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	if err := installPy(ctx, sb); err != nil {
		b.Fatal(err)
	}
	script, err := os.ReadFile("testdata/overhead.py")
	if err != nil {
		b.Fatal(err)
	}
	if err := sb.WriteFile(ctx, pyDir+"/overhead.py", script, 0o644); err != nil {
		b.Fatal(err)
	}
	var report map[string]struct {
		Frames       int       `json:"frames"`
		CwmRatio     float64   `json:"cwm_ratio"`
		NaiveRatio   float64   `json:"naive_ratio"`
		CwmOverNaive float64   `json:"cwm_over_naive"`
		Rounds       []float64 `json:"rounds"`
	}
	for range b.N {
		r, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"/usr/bin/python3", pyDir + "/overhead.py", "7"}})
		if err != nil || !r.Success() {
			b.Fatalf("overhead.py: %v %s %s", err, r.Describe(), r.Stderr)
		}
		if err := json.Unmarshal(r.Stdout, &report); err != nil {
			b.Fatalf("overhead.py output %q: %v", r.Stdout, err)
		}
	}
	for _, name := range []string{"collatz", "bubble_sort", "words", "total"} {
		w := report[name]
		b.Logf("%-12s traced/untraced: cwm %6.1fx, naive %7.1fx; cwm/naive %.3f %v", name, w.CwmRatio, w.NaiveRatio, w.CwmOverNaive, w.Rounds)
		b.ReportMetric(w.CwmOverNaive, name+"-cwm/naive")
	}
	b.Logf("geometric mean of cwm/naive: %.3f", report["geomean"].CwmOverNaive)
	b.ReportMetric(report["geomean"].CwmOverNaive, "geomean-cwm/naive")
	for _, name := range []string{"collatz", "bubble_sort", "words"} {
		if w := report[name]; w.CwmOverNaive > limit {
			b.Errorf("%s: cwm's overhead ratio is %.2fx the naive tracer's, want at most %.1f", name, w.CwmOverNaive, limit)
		}
	}
}
