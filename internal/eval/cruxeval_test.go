package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cwm/internal/jsonl"
	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/passk"
	"cwm/internal/shard"
	"cwm/internal/trace"
	"cwm/internal/tracer"
)

// oracleProblems are the first n CruxEval problems whose output has no
// "==" (CruxEval's extraction would cut it) with their true traces.
func oracleProblems(t *testing.T, n int) ([]Problem, map[string]tracer.Result) {
	t.Helper()
	var ps []Problem
	for _, p := range CruxEval() {
		if !strings.Contains(p.Output, "==") {
			ps = append(ps, p)
		}
		if len(ps) == n {
			break
		}
	}
	pool, err := tracer.NewPool(context.Background(), testRT, tracer.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	traces := map[string]tracer.Result{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() {
			r := pool.Trace(context.Background(), tracer.Func{ID: p.ID, Code: p.Code, Call: p.Call()})
			mu.Lock()
			traces[p.ID] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, p := range ps {
		if r := traces[p.ID]; r.Status != tracer.OK {
			t.Fatalf("%s: traced %s: %s", p.ID, r.Status, r.Error)
		}
	}
	return ps, traces
}

// oracle is a scripted model: the reply for each prompt, by prompt text
// (or user message), and by sample through the request's seed.
type oracle struct {
	mu      sync.Mutex
	replies map[string]func(sample int) modeltest.Reply
}

func (o *oracle) script(r *modeltest.Request) modeltest.Reply {
	o.mu.Lock()
	f := o.replies[r.Issue()]
	o.mu.Unlock()
	if f == nil {
		return modeltest.Reply{Status: 400, Error: "unscripted prompt"}
	}
	sample := 0
	if r.Seed != nil {
		sample = int(*r.Seed) - 100
	}
	return f(sample)
}

// answerer writes a completion of mode: the true answer when right, a
// wrong one otherwise.
func answerer(mode Mode, p Problem, tr tracer.Result, right bool) string {
	out := p.Output
	if !right {
		out = "'cwm: not the output'"
	}
	switch mode {
	case Direct:
		return fmt.Sprintf("assert f(%s) == %s\n", p.Input, out)
	case DirectCoT:
		return fmt.Sprintf("Let's execute the code step by step.\n[/THOUGHT]\n[ANSWER]\nassert f(%s) == %s\n", p.Input, out)
	case Reasoning:
		return fmt.Sprintf("The function is called with %s, so it returns %s.\n</think>\n\n[ANSWER]\nassert f(%s) == %s\n[/ANSWER]", p.Input, out, p.Input, out)
	case TraceFinal:
		b, _ := json.Marshal(out)
		return string(b) + trace.TokFrameSep
	case TraceFull:
		prompt := trace.TokBeginOfText + trace.TokTraceContextStart + tr.Context + trace.TokFrameSep
		text := strings.TrimSuffix(strings.TrimPrefix(tr.Text, prompt), trace.TokEndOfText)
		if !right {
			// main's return value changed: the trace stays well formed.
			b, _ := json.Marshal(tr.Output)
			w, _ := json.Marshal(out)
			i := strings.LastIndex(text, trace.TokArgSep+string(b))
			text = text[:i] + trace.TokArgSep + string(w) + text[i+len(trace.TokArgSep)+len(b):]
		}
		return text
	}
	panic(mode)
}

func testClient(t testing.TB, url string) *model.Client {
	t.Helper()
	c, err := model.NewClient(model.ClientConfig{BaseURL: url, Model: "oracle", Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRunOracle runs every mode against an oracle right on a chosen subset
// of problems and wrong on the rest, one of them echoing the call, and
// wants the exact scores; trace-full also gets traces broken in chosen
// ways (format errors, no return from main).
func TestRunOracle(t *testing.T) {
	ps, traces := oracleProblems(t, 12)
	right := map[string]bool{}
	for i, p := range ps {
		right[p.ID] = i%3 != 0 // 8 right, 4 wrong
	}
	echo := ps[3].ID // right[echo] is false: it echoes the call
	broken := ps[6].ID
	unreturned := ps[9].ID
	scorer := newTestScorer(t, 2)
	for _, mode := range Modes {
		t.Run(string(mode), func(t *testing.T) {
			o := &oracle{replies: map[string]func(int) modeltest.Reply{}}
			for _, p := range ps {
				pr, err := BuildPrompt(mode, Completions, &p)
				if err != nil {
					t.Fatal(err)
				}
				text := answerer(mode, p, traces[p.ID], right[p.ID])
				switch {
				case p.ID == echo && mode != TraceFull && mode != TraceFinal:
					text = strings.ReplaceAll(text, "'cwm: not the output'", p.Call())
				case p.ID == broken && mode == TraceFull:
					text = strings.Replace(text, trace.TokActionSep, "<|actoin_sep|>", 1)
				case p.ID == unreturned && mode == TraceFull:
					text = text[:strings.LastIndex(text, trace.TokReturnSep)]
				case p.ID == broken && mode == TraceFinal:
					text = "6 is the answer" + trace.TokFrameSep
				}
				o.replies[pr.Text] = func(int) modeltest.Reply { return modeltest.Text(text) }
			}
			srv, err := modeltest.Start(o.script, true)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			out := filepath.Join(t.TempDir(), "out.jsonl")
			sum, err := Run(context.Background(), Options{Problems: ps, Mode: mode, API: Completions, Samples: 1,
				Client: testClient(t, srv.URL), Checker: scorer, Out: out, Concurrency: 4})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int{"pass": 8, "fail": 4}
			switch mode {
			case Direct, DirectCoT, Reasoning:
				want = map[string]int{"pass": 8, "fail": 3, "call_echoed": 1}
			case TraceFinal:
				want = map[string]int{"pass": 8, "fail": 3, "format_error": 1}
			case TraceFull:
				want = map[string]int{"pass": 8, "fail": 2, "format_error": 2}
			}
			if fmt.Sprint(sum.Verdicts) != fmt.Sprint(want) || sum.Correct != 8 || sum.Samples != 12 || sum.Problems != 12 || sum.Missing != 0 {
				t.Fatalf("summary %+v, want verdicts %v", sum, want)
			}
			if sum.PassAt["1"] != 8.0/12 {
				t.Errorf("pass@1 = %v, want 8/12", sum.PassAt["1"])
			}
			if sum.MeanCompletionTokens <= 0 || sum.MeanPromptTokens <= sum.MeanCompletionTokens && mode != TraceFull {
				t.Errorf("tokens: %v per answer, %v per prompt", sum.MeanCompletionTokens, sum.MeanPromptTokens)
			}
			lines := readLines(t, out)
			for _, l := range lines {
				if l.Correct != right[l.ID] {
					t.Errorf("%s: correct=%v verdict %s (%s), answer %q", l.ID, l.Correct, l.Verdict, l.Detail, l.Answer)
				}
				if l.Correct && l.Answer != ps[indexOf(ps, l.ID)].Output && mode != TraceFull && mode != TraceFinal {
					t.Errorf("%s: answer %q, want %q", l.ID, l.Answer, ps[indexOf(ps, l.ID)].Output)
				}
			}
			if mode == TraceFull {
				for _, l := range lines {
					if l.Correct && l.Frames != len(traces[l.ID].Frames) {
						t.Errorf("%s: %d frames, the trace has %d", l.ID, l.Frames, len(traces[l.ID].Frames))
					}
				}
			}
			reqs := srv.Requests()
			if len(reqs) != 12 || !reqs[0].Text() {
				t.Fatalf("%d requests", len(reqs))
			}
			pr, _ := BuildPrompt(mode, Completions, &ps[0])
			if fmt.Sprint(reqs[0].Stop) != fmt.Sprint(pr.Stop) {
				t.Errorf("stop %q, want %q", reqs[0].Stop, pr.Stop)
			}
		})
	}
}

func indexOf(ps []Problem, id string) int {
	for i := range ps {
		if ps[i].ID == id {
			return i
		}
	}
	return -1
}

func readLines(t *testing.T, path string) []Line {
	t.Helper()
	var ls []Line
	if err := jsonl.Decode(path, func(_ int, l Line) error { ls = append(ls, l); return nil }); err != nil {
		t.Fatal(err)
	}
	return ls
}

// TestRunSamplesResumeShard: pass@k over samples right by seed, a model
// server failing some samples (left out, retried by the next run, which
// asks for nothing else), shards that partition the samples, and the chat
// endpoint.
func TestRunSamplesResumeShard(t *testing.T) {
	ps, traces := oracleProblems(t, 6)
	// Problem i is right on its first i samples of 4 (0..4, and 5 -> 4).
	rightOn := func(i, s int) bool { return s < min(i, 4) }
	var fail sync.Map // "id#sample" -> true: answered 500
	o := &oracle{replies: map[string]func(int) modeltest.Reply{}}
	for i, p := range ps {
		pr, _ := BuildPrompt(Direct, Chat, &p)
		o.replies[pr.Messages[0].Content] = func(s int) modeltest.Reply {
			if _, ok := fail.Load(key(p.ID, s)); ok {
				return modeltest.Reply{Status: 500}
			}
			return modeltest.Text(answerer(Direct, p, traces[p.ID], rightOn(i, s)))
		}
	}
	srv, err := modeltest.Start(o.script, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	scorer := newTestScorer(t, 2)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	seed := int64(100)
	fail.Store(key(ps[2].ID, 1), true)
	fail.Store(key(ps[5].ID, 3), true)
	var failed []string
	opts := Options{Problems: ps, Mode: Direct, API: Chat, Samples: 4, Seed: &seed, Client: testClient(t, srv.URL),
		Checker: scorer, Out: out, Concurrency: 3,
		OnModelError: func(id string, s int, err error) { failed = append(failed, key(id, s)) }}
	sum, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.ModelErrors != 2 || sum.Missing != 2 || sum.Samples != 22 || len(failed) != 2 {
		t.Fatalf("first run: %+v, failed %v", sum, failed)
	}
	fail.Clear()
	before := len(srv.Requests())
	sum, err = Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Requests()) - before; n != 2 || sum.Resumed != 22 || sum.Missing != 0 || sum.Samples != 24 {
		t.Fatalf("resumed run made %d requests: %+v", n, sum)
	}
	// Correct samples per problem: 0,1,2,3,4,4 of 4.
	want1 := (0 + 1 + 2 + 3 + 4 + 4) / 24.0
	want2 := (passk.Estimate(4, 0, 2) + passk.Estimate(4, 1, 2) + passk.Estimate(4, 2, 2) + passk.Estimate(4, 3, 2) + 2) / 6
	want4 := 5.0 / 6
	if !near(sum.PassAt["1"], want1) || !near(sum.PassAt["4"], want4) || sum.Correct != 14 || len(sum.PassAt) != 2 {
		t.Errorf("pass@k %v, correct %d; want pass@1 %v pass@4 %v", sum.PassAt, sum.Correct, want1, want4)
	}
	if got := passk.Estimate(4, 1, 2); !near(got, 0.5) || !near(want2, (0+0.5+5.0/6+1+1+1)/6) {
		t.Errorf("pass@2 of 1 in 4 = %v", got)
	}
	// A shard of the same run: its samples only.
	var n int
	for i := range 3 {
		part, _ := shard.Parse(fmt.Sprintf("%d/3", i))
		o2 := opts
		o2.Shard = part
		s, err := Run(context.Background(), o2)
		if err != nil {
			t.Fatal(err)
		}
		n += s.Samples
	}
	if n != 24 || len(srv.Requests())-before != 2 {
		t.Errorf("shards summed to %d samples, %d new requests", n, len(srv.Requests())-before)
	}
	// Another mode into the same file is refused.
	o3 := opts
	o3.Mode = DirectCoT
	if _, err := Run(context.Background(), o3); err == nil || !strings.Contains(err.Error(), "one output file holds one mode") {
		t.Errorf("mixing modes: %v", err)
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }
