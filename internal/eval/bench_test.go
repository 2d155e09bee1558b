package eval

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"cwm/internal/model/modeltest"
	"cwm/internal/sandbox"
	"cwm/internal/tracer"
)

// BenchmarkHarness is the harness's own cost per mode: all 800 CruxEval
// problems against an instant model that answers right (replies built
// beforehand), at --concurrency 32, scored on 2 warm sandboxed servers.
// It reports problems per second and the seconds for the 800.
func BenchmarkHarness(b *testing.B) {
	ps := CruxEval()
	traces := map[string]tracer.Result{}
	pool, err := tracer.NewPool(context.Background(), testRT, tracer.Options{Workers: 2})
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, p := range ps {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			r := pool.Trace(context.Background(), tracer.Func{ID: p.ID, Code: p.Code, Call: p.Call()})
			mu.Lock()
			traces[p.ID] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	pool.Close()
	scorer, err := NewScorer(context.Background(), testRT, 2, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer scorer.Close()
	for _, mode := range Modes {
		replies := map[string]string{}
		for _, p := range ps {
			pr, err := BuildPrompt(mode, Completions, &p)
			if err != nil {
				b.Fatal(err)
			}
			replies[pr.Text] = answerer(mode, p, traces[p.ID], true)
		}
		srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
			return modeltest.Reply{Content: replies[r.Prompt], Usage: &modeltest.Usage{PromptTokens: 1, CompletionTokens: 1}}
		}, false)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(string(mode), func(b *testing.B) {
			correct := 0
			for b.Loop() {
				out := filepath.Join(b.TempDir(), "out.jsonl")
				sum, err := Run(context.Background(), Options{Problems: ps, Mode: mode, API: Completions,
					Client: testClient(b, srv.URL), Checker: scorer, Out: out, Concurrency: 32})
				if err != nil {
					b.Fatal(err)
				}
				correct = sum.Correct
			}
			if correct < 790 {
				b.Fatalf("the oracle was right on %d of 800", correct)
			}
			s := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(800/s, "problems/s")
			b.ReportMetric(s, "s/800")
		})
		srv.Close()
	}
}

// BenchmarkScore is one CruxEval check on the warm fork servers against
// the same check run as a fresh python3 in a fresh sandbox.
func BenchmarkScore(b *testing.B) {
	ps := CruxEval()[:50]
	b.Run("warm", func(b *testing.B) {
		scorer, err := NewScorer(context.Background(), testRT, 1, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer scorer.Close()
		i := 0
		for b.Loop() {
			p := &ps[i%len(ps)]
			if v, d := scorer.Check(context.Background(), p, p.Output); v != Pass {
				b.Fatalf("%s: %s %s", p.ID, v, d)
			}
			i++
		}
	})
	b.Run("fresh-python3", func(b *testing.B) {
		i := 0
		for b.Loop() {
			p := &ps[i%len(ps)]
			res, err := testRT.Run(context.Background(), sandbox.Config{}, sandbox.Cmd{
				Args: []string{"python3", "-c", Program(p, p.Output)}, Timeout: ScoreTimeout})
			if err != nil || !res.Success() {
				b.Fatalf("%s: %v %s", p.ID, err, fmt.Sprint(res.Describe()))
			}
			i++
		}
	})
}
