package agent

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/sandbox"
)

// stepClock records when each episode's requests arrive at the fake
// server; the gap between two requests of an episode is one step of the
// harness: reply parsing, the tool run, bookkeeping and the next HTTP call.
type stepClock struct {
	mu sync.Mutex
	at map[string][]time.Time
}

func (c *stepClock) script(r *modeltest.Request) modeltest.Reply {
	now := time.Now()
	c.mu.Lock()
	c.at[r.Issue()] = append(c.at[r.Issue()], now)
	c.mu.Unlock()
	return modeltest.Tool("bash", "true")
}

// gaps are the step durations of all episodes.
func (c *stepClock) gaps() []time.Duration {
	var out []time.Duration
	for _, ts := range c.at {
		for i := 1; i < len(ts); i++ {
			out = append(out, ts[i].Sub(ts[i-1]))
		}
	}
	slices.Sort(out)
	return out
}

// steadyRate is steps per second while every episode was stepping: from
// the last episode's first request to the first episode's last request.
func (c *stepClock) steadyRate() float64 {
	var from, to time.Time
	for _, ts := range c.at {
		if from.IsZero() || ts[0].After(from) {
			from = ts[0]
		}
		if to.IsZero() || ts[len(ts)-1].Before(to) {
			to = ts[len(ts)-1]
		}
	}
	n := 0
	for _, ts := range c.at {
		for _, t := range ts {
			if !t.Before(from) && !t.After(to) {
				n++
			}
		}
	}
	if !to.After(from) {
		return 0
	}
	return float64(n) / to.Sub(from).Seconds()
}

func pct(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	return float64(d[int(float64(len(d)-1)*p)].Microseconds()) / 1000
}

// benchHarness is a runner over an instant fake model that always answers
// `<tool: bash>\ntrue\n</tool>`, with CWM's 128-turn episodes.
func benchHarness(b *testing.B, clock *stepClock) *harness {
	h := newHarness(b, clock.script, "cwm", Limits{})
	// Requests are not recorded: a 128-turn episode's requests hold its
	// whole history each.
	srv, err := modeltest.Start(clock.script, false)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	client, err := model.NewClient(model.ClientConfig{BaseURL: srv.URL, Model: "fake-model"})
	if err != nil {
		b.Fatal(err)
	}
	h.server, h.runner.Client = srv, client
	return h
}

// BenchmarkStep measures one step of one episode, against the floor of
// what any harness must do per step: an HTTP round trip to the model
// server and a command in the sandbox's shell.
func BenchmarkStep(b *testing.B) {
	b.Run("harness", func(b *testing.B) {
		clock := &stepClock{at: map[string][]time.Time{}}
		h := benchHarness(b, clock)
		b.ResetTimer()
		for steps := 0; steps < b.N; {
			tr, err := h.runner.Run(context.Background(), h.episode())
			if err != nil {
				b.Fatal(err)
			}
			steps += len(tr.Steps)
		}
		b.StopTimer()
		g := clock.gaps()
		b.ReportMetric(pct(g, 0.5), "p50-ms/step")
		b.ReportMetric(pct(g, 0.9), "p90-ms/step")
		b.ReportMetric(pct(g, 0.99), "p99-ms/step")
	})
	b.Run("floor", func(b *testing.B) {
		clock := &stepClock{at: map[string][]time.Time{}}
		h := benchHarness(b, clock)
		sb, err := h.runner.Sandboxes.Open(context.Background(), h.env)
		if err != nil {
			b.Fatal(err)
		}
		defer sb.Close()
		sh, err := sb.Shell(context.Background(), sandbox.ShellOptions{Dir: "/repo"})
		if err != nil {
			b.Fatal(err)
		}
		defer sh.Close()
		body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
		var times []time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			resp, err := http.Post(h.server.URL+"/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if _, err := sh.Run(context.Background(), "true", 0); err != nil {
				b.Fatal(err)
			}
			times = append(times, time.Since(t0))
		}
		b.StopTimer()
		slices.Sort(times)
		b.ReportMetric(pct(times, 0.5), "p50-ms/step")
	})
}

// BenchmarkConcurrent runs 64 episodes at once and reports the steps per
// second the harness sustains while all of them are stepping.
func BenchmarkConcurrent(b *testing.B) {
	const episodes = 64
	clock := &stepClock{at: map[string][]time.Time{}}
	h := benchHarness(b, clock)
	b.ResetTimer()
	start := time.Now()
	total := 0
	for i := 0; i < b.N; i++ {
		clear(clock.at)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for e := 0; e < episodes; e++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ep := h.episode()
				tk := *ep.Task
				tk.InstanceID = fmt.Sprintf("bench-%d-%d", i, e)
				tk.ProblemStatement = tk.InstanceID
				ep.Task = &tk
				tr, err := h.runner.Run(context.Background(), ep)
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				total += len(tr.Steps)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	b.ReportMetric(clock.steadyRate(), "steady-steps/s")
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "overall-steps/s")
	b.ReportMetric(pct(clock.gaps(), 0.5), "p50-ms/step")
}
