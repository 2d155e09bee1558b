package tracer

import (
	"context"
	"os"
	"path/filepath"
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
	type target struct {
		name string
		opts func(t *testing.T) (Options, int)
	}
	targets := []target{}
	for _, c := range []struct {
		suite string
		minor int
	}{{"bullseye", 9}, {"bookworm", 11}, {"trixie", 13}} {
		targets = append(targets, target{c.suite, func(t *testing.T) (Options, int) {
			return Options{Base: basetest.Debian(t, c.suite).Rootfs()}, c.minor
		}})
	}
	for _, py := range strings.Fields(os.Getenv(EnvPythons)) {
		targets = append(targets, target{filepath.Base(filepath.Dir(filepath.Dir(py))), func(t *testing.T) (Options, int) {
			return interpreterOptions(t, py)
		}})
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			opts, minor := tg.opts(t)
			if minor < OldestPython || minor > NewestPython {
				t.Skipf("Python 3.%d: not one the tracer runs on", minor)
			}
			opts.Workers, opts.Timeout = testPool(t).Options().Workers, 10*time.Second
			p, err := NewPool(ctx, testRuntime(t), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			traceAll(ctx, p, fs[:40]) // runners forked and warm, as in BenchmarkCruxEvalThroughput
			// A pass takes a second or two: its rate swings with whatever
			// else the machine runs, so the figure is the median of five.
			var got []Result
			rates := make([]float64, cruxPasses)
			for i := range rates {
				t0 := time.Now()
				got = traceAll(ctx, p, fs)
				rates[i] = float64(len(fs)) / time.Since(t0).Seconds()
			}
			slices.Sort(rates)
			var pairs []outputPair
			ok, differ := 0, 0
			var first []string
			for i, r := range got {
				if r.Status != OK {
					t.Errorf("%s on 3.%d: status %s (%s)", cases[i].ID, minor, r.Status, r.Error)
					continue
				}
				ok++
				pairs = append(pairs, outputPair{ID: cases[i].ID, Got: r.Output, Want: cases[i].Output})
				if r.Text != host[i].Text {
					differ++
					if len(first) < 10 {
						first = append(first, cases[i].ID)
					}
				}
			}
			bad := comparePython(t, pairs)
			for _, b := range bad {
				t.Errorf("3.%d: output differs from CRUXEval's as a Python value: %s", minor, b)
			}
			t.Logf("Python 3.%d: %d/%d ok, %d/%d outputs CRUXEval's, %d texts differ from the host's 3.11 (first: %v), %.0f functions/s (median of %d passes, %.0f to %.0f; %d workers)",
				minor, ok, len(fs), len(pairs)-len(bad), len(fs), differ, first, rates[len(rates)/2], len(rates), rates[0], rates[len(rates)-1], opts.Workers)
		})
	}
}
