package tracer

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"cwm/internal/base/basetest"
)

// EnvCruxPythons turns on TestCruxEvalOnPythons: make test runs the golden
// programs on every base (TestGoldenOnEveryPython) and CruxEval on the
// host's Python only (TestCruxEval); the 800 on every Python are a figure
// of docs/benchmarks.md, a few seconds per Python once the bases exist.
const EnvCruxPythons = "CWM_TRACER_CRUXEVAL"

// cruxPasses is how many times TestCruxEvalOnPythons traces the 800.
const cruxPasses = 5

// TestCruxEvalOnPythons traces CruxEval's 800 functions on the Debian
// test bases' Pythons (3.9, 3.11, 3.13) and on the interpreters of
// $CWM_TRACER_PYTHONS, with as many workers as the shared pool: every
// function must end ok with CRUXEval's output, and the log gives, per
// Python, how many texts differ from the host's (3.11) and the throughput
// (docs/benchmarks.md, "The tracer on every Python"):
//
//	CWM_TRACER_CRUXEVAL=1 go test ./internal/tracer -run TestCruxEvalOnPythons -v
func TestCruxEvalOnPythons(t *testing.T) {
	if os.Getenv(EnvCruxPythons) == "" {
		t.Skipf("$%s is not set", EnvCruxPythons)
	}
	cases := loadCrux(t)
	fs := cruxFuncs(cases)
	ctx := context.Background()
	host := traceAll(ctx, testPool(t), fs)
	var runs []*cruxRun
	for _, c := range []struct {
		suite string
		minor int
	}{{"bullseye", 9}, {"bookworm", 11}, {"trixie", 13}} {
		runs = append(runs, &cruxRun{name: c.suite, minor: c.minor, opts: Options{Base: basetest.Debian(t, c.suite).Rootfs()}})
	}
	for _, py := range strings.Fields(os.Getenv(EnvPythons)) {
		opts, minor := interpreterOptions(t, py)
		if minor < OldestPython || minor > NewestPython {
			t.Logf("%s: Python 3.%d is not one the tracer runs on", py, minor)
			continue
		}
		runs = append(runs, &cruxRun{name: py, minor: minor, opts: opts})
	}
	for _, r := range runs {
		r.opts.Workers, r.opts.Timeout = testPool(t).Options().Workers, 10*time.Second
		p, err := NewPool(ctx, testRuntime(t), r.opts)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		defer p.Close()
		r.pool = p
		traceAll(ctx, p, fs[:40]) // runners forked and warm, as in BenchmarkCruxEvalThroughput
	}
	// A pass takes a second or two, and its rate swings with whatever else
	// the machine runs: the Pythons take turns, pass after pass, so that
	// each sees the same load, and the figure is the median of the passes.
	for range cruxPasses {
		for _, r := range runs {
			t0 := time.Now()
			r.got = traceAll(ctx, r.pool, fs)
			r.rates = append(r.rates, float64(len(fs))/time.Since(t0).Seconds())
		}
	}
	for _, r := range runs {
		slices.Sort(r.rates)
		var pairs []outputPair
		ok, differ := 0, 0
		var first []string
		for i, res := range r.got {
			if res.Status != OK {
				t.Errorf("%s on 3.%d: status %s (%s)", cases[i].ID, r.minor, res.Status, res.Error)
				continue
			}
			ok++
			pairs = append(pairs, outputPair{ID: cases[i].ID, Got: res.Output, Want: cases[i].Output})
			if res.Text != host[i].Text {
				differ++
				if len(first) < 10 {
					first = append(first, cases[i].ID)
				}
			}
		}
		bad := comparePython(t, pairs)
		for _, b := range bad {
			t.Errorf("3.%d: output differs from CRUXEval's as a Python value: %s", r.minor, b)
		}
		t.Logf("Python 3.%d (%s): %d/%d ok, %d/%d outputs CRUXEval's, %d texts differ from the host's 3.11 (first: %v), %.0f functions/s (median of %d passes, %.0f to %.0f; %d workers)",
			r.minor, r.name, ok, len(fs), len(pairs)-len(bad), len(fs), differ, first, r.rates[len(r.rates)/2], len(r.rates), r.rates[0], r.rates[len(r.rates)-1], r.opts.Workers)
	}
}

// cruxRun is one Python of TestCruxEvalOnPythons.
type cruxRun struct {
	name  string
	minor int
	opts  Options
	pool  *Pool
	got   []Result
	rates []float64 // functions/s of each pass
}
