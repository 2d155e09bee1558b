package sim_test

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cwm/internal/model/modeltest"
	"cwm/internal/sim"
	"cwm/internal/trajectory"

	"github.com/google/go-cmp/cmp"
)

// hugeServer is a model endpoint whose every reply is a chat completion
// whose content never ends: it writes up to about 1 GiB, a MiB at a
// time, until the client stops reading.
func hugeServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	chunk := strings.Repeat("a", 1<<20)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if _, err := w.Write([]byte(`{"id":"x","object":"chat.completion","created":0,"model":"world","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`)); err != nil {
			return
		}
		for range 1 << 10 {
			if _, err := w.Write([]byte(chunk)); err != nil {
				return // the client stopped reading
			}
		}
		w.Write([]byte(`"}}]}`))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/v1"
}

// TestBadWorldModelReplies: a world model that answers invalid JSON,
// times out, streams a gigabyte or describes a file that does not exist
// is asked again up to its attempts, then the command runs for real and
// the record says why; each failed attempt is counted by its cause.
func TestBadWorldModelReplies(t *testing.T) {
	cmd := "python3 -c 'print(6*7)'"
	h := newSimHarness(t, []modeltest.Reply{modeltest.Tool("bash", cmd)})
	valid := reply(trajectory.Execution{Stdout: "42\n", ExitCode: 0})
	cases := []struct {
		name     string
		answer   func(n int) modeltest.Reply
		huge     bool
		timeout  time.Duration
		failures map[string]int
		fallback string
	}{
		{name: "invalid JSON", answer: func(int) modeltest.Reply { return modeltest.Text(`{"stdout": "42", "exit_code": `) },
			failures: map[string]int{sim.CauseInvalidJSON: 2}, fallback: sim.CauseInvalidJSON},
		{name: "an unknown field", answer: func(int) modeltest.Reply { return modeltest.Text(`{"stdout":"","stderr":"","exit_code":0,"files":[]}`) },
			failures: map[string]int{sim.CauseInvalidJSON: 2}, fallback: sim.CauseInvalidJSON},
		{name: "timeout", answer: func(int) modeltest.Reply { return modeltest.Reply{Delay: time.Hour} }, timeout: 300 * time.Millisecond,
			failures: map[string]int{sim.CauseTimeout: 2}, fallback: sim.CauseTimeout},
		{name: "a gigabyte", huge: true,
			failures: map[string]int{sim.CauseOversized: 2}, fallback: sim.CauseOversized},
		{name: "server error", answer: func(int) modeltest.Reply { return modeltest.Reply{Status: 500} },
			failures: map[string]int{sim.CauseModelError: 2}, fallback: sim.CauseModelError},
		{name: "a file that does not exist", answer: func(int) modeltest.Reply {
			return reply(trajectory.Execution{Stderr: "Traceback (most recent call last):\n  File \"/repo/no_such_module.py\", line 3, in <module>\nNameError: x\n", ExitCode: 1})
		}, failures: map[string]int{sim.CauseMissingFile: 2}, fallback: sim.CauseMissingFile},
		{name: "invalid, then valid", answer: func(n int) modeltest.Reply {
			if n == 1 {
				return modeltest.Text("the command prints 42")
			}
			return valid
		}, failures: map[string]int{sim.CauseInvalidJSON: 1}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			cfg := sim.WorldModelConfig{Attempts: 2, Timeout: tt.timeout}
			var wm *sim.WorldModel
			if tt.huge {
				cfg.BaseURL, cfg.Model = hugeServer(t), "world"
				w, err := sim.NewWorldModel(cfg)
				if err != nil {
					t.Fatal(err)
				}
				wm = w
			} else {
				var n atomic.Int32
				wm = startWorldModel(t, cfg, func(string, *modeltest.Request) modeltest.Reply { return tt.answer(int(n.Add(1))) }).wm
			}
			tr := h.run(t, &sim.Options{World: wm})
			var rec *trajectory.Sim
			var obs string
			for _, st := range tr.Steps {
				if st.Sim != nil {
					rec, obs = st.Sim, st.Observation
				}
			}
			if rec == nil {
				t.Fatalf("no sim record in %+v", tr.Steps)
			}
			if diff := cmp.Diff(tt.failures, rec.Failures); diff != "" {
				t.Errorf("failures (-want +got):\n%s", diff)
			}
			if rec.Fallback != tt.fallback {
				t.Errorf("fallback = %q, want %q", rec.Fallback, tt.fallback)
			}
			wantObserved := sim.ObserveReal
			if tt.fallback == "" {
				wantObserved = sim.ObserveSim
			}
			if rec.Observed != wantObserved || obs != "42" {
				t.Errorf("observed %s %q, want %s \"42\"", rec.Observed, obs, wantObserved)
			}
			if tt.fallback != "" && (rec.Real == nil || tr.Sim.Fallbacks != 1 || tr.Sim.Failures[tt.fallback] != 2) {
				t.Errorf("real %+v, summary %+v: want the real run and the fallback counted", rec.Real, tr.Sim)
			}
		})
	}
}

// TestPredictedReward: with a reward model, a forage episode records the
// predicted reward apart from the real one, which stays null; a reward
// model that never answers validly is recorded, not an error of the run.
func TestPredictedReward(t *testing.T) {
	h := newSimHarness(t, []modeltest.Reply{modeltest.Tool("bash", "python3 -c 'print(6*7)'")})
	for _, tt := range []struct {
		name   string
		reward string
		want   *float64
	}{
		{"valid", `{"resolved": false, "reward": -1}`, new(float64)},
		{"invalid", `the tests pass`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var prompt string
			w := startWorldModel(t, sim.WorldModelConfig{Attempts: 2}, func(_ string, r *modeltest.Request) modeltest.Reply {
				if strings.Contains(r.Messages[0].Content, "reward model") {
					mu.Lock()
					prompt = r.Messages[1].Content
					mu.Unlock()
					return modeltest.Text(tt.reward)
				}
				return reply(trajectory.Execution{Stdout: "42\n"})
			})
			rm, err := sim.NewRewardModel(sim.WorldModelConfig{BaseURL: w.srv.URL, Model: "reward", Attempts: 2})
			if err != nil {
				t.Fatal(err)
			}
			tr := h.run(t, &sim.Options{World: w.wm, Reward: rm})
			if tr.Reward != nil || tr.Sim == nil {
				t.Fatalf("reward %v, sim %+v: want no real reward and a sim summary", tr.Reward, tr.Sim)
			}
			if tt.want != nil && (tr.Sim.PredictedReward == nil || *tr.Sim.PredictedReward != -1) {
				t.Errorf("predicted reward %v, want -1", tr.Sim.PredictedReward)
			}
			if tt.want == nil && (tr.Sim.PredictedReward != nil || !strings.Contains(tr.Sim.RewardError, "invalid_json")) {
				t.Errorf("predicted %v, error %q: want none and the cause", tr.Sim.PredictedReward, tr.Sim.RewardError)
			}
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(prompt, h.task.ProblemStatement) || strings.Contains(prompt, goldMarker) {
				t.Errorf("reward prompt %q: want the statement and not the gold patch", prompt)
			}
		})
	}
}
