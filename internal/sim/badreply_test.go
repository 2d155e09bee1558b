package sim_test

import (
	"net"
	"net/http"
	"strings"
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
				n := 0
				wm = startWorldModel(t, cfg, func(string, *modeltest.Request) modeltest.Reply { n++; return tt.answer(n) }).wm
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
