package sim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"cwm/internal/agent"
	"cwm/internal/env"
	"cwm/internal/env/envtest"
	"cwm/internal/episode/episodetest"
	"cwm/internal/export"
	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/sandbox"
	"cwm/internal/sim"
	"cwm/internal/task"
	"cwm/internal/trajectory"

	"github.com/google/go-cmp/cmp"
)

// fixEdit undoes the test repository's bug.
const fixEdit = "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\ndef add(a, b):\n    return a + b\n>>>>>>> REPLACE"

// pytest runs the test repository's suite with its per-test report.
const pytest = "python3 -m pytest -rA -p no:cacheprovider test_calc.py"

// policy is the scripted agent: eight commands the classifier sends to
// the world model (tests failing and passing, Python printing to stdout
// and stderr, exit codes 0, 1 and 3), reading commands and an edit
// between them.
var policy = []modeltest.Reply{
	modeltest.Tool("bash", pytest),
	modeltest.Tool("bash", "ls"),
	modeltest.Tool("edit", fixEdit),
	modeltest.Tool("bash", pytest),
	modeltest.Tool("bash", "python3 -c 'print(6*7)'"),
	modeltest.Tool("bash", "cat calc.py"),
	modeltest.Tool("bash", "python3 calc.py; echo done"),
	modeltest.Tool("bash", "python3 -c 'import sys; sys.exit(3)'"),
	modeltest.Tool("bash", "python3 -c 'import sys; print(1, file=sys.stderr)'"),
	modeltest.Tool("bash", pytest+" -k add"),
	modeltest.Tool("bash", "python3 -c 'from calc import add; print(add(2, 3))'"),
}

// classified is how many of policy's commands go to the world model.
const classified = 8

// simHarness is a runtime, the scripted policy's endpoint and the test
// repository's task.
type simHarness struct {
	replies []modeltest.Reply
	sbs     *env.Sandboxes
	policy  *model.Client
	env     *env.Env
	task    *task.Task
}

// goldMarker and testMarker are planted in the task's gold patch and
// hidden tests: no world-model request may hold them.
const (
	goldMarker = "GOLD-PATCH-MARKER-7f3a"
	testMarker = "HIDDEN-TEST-MARKER-91bc"
)

func newSimHarness(t *testing.T, replies []modeltest.Reply) *simHarness {
	t.Helper()
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		if n := r.Turn(); n < len(replies) {
			return replies[n]
		}
		return modeltest.Text("done")
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	client, err := model.NewClient(model.ClientConfig{BaseURL: srv.URL, Model: "policy", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	layer, tk := episodetest.CalcRepo(t)
	tk.Patch += "\n# " + goldMarker + "\n"
	tk.TestPatch = "diff --git a/test_hidden.py b/test_hidden.py\n+# " + testMarker + "\n"
	e := envtest.Put(t, t.TempDir(), tk.EnvID, layer)
	return &simHarness{replies: replies, sbs: env.NewSandboxes(rt), policy: client, env: e, task: tk}
}

// run runs the policy's episode with the sim options o.
func (h *simHarness) run(t *testing.T, o *sim.Options) *trajectory.Trajectory {
	t.Helper()
	p, err := agent.NewProtocol("cwm", "")
	if err != nil {
		t.Fatal(err)
	}
	r := &agent.Runner{Sandboxes: h.sbs, Client: h.policy, Protocol: p, Sim: o,
		Limits: agent.Limits{MaxTurns: len(h.replies) + 1, CommandTimeout: time.Minute}}
	tr, err := r.Run(context.Background(), agent.Attempt{Task: h.task, Env: h.env})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return tr
}

// worldModel is a scripted world-model endpoint: answer gets the
// command (the user message's last section) and the request.
type worldModel struct {
	srv *modeltest.Server
	wm  *sim.WorldModel
}

func startWorldModel(t *testing.T, cfg sim.WorldModelConfig, answer func(command string, r *modeltest.Request) modeltest.Reply) *worldModel {
	t.Helper()
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		return answer(commandOf(r), r)
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg.BaseURL, cfg.Model = srv.URL, "world"
	wm, err := sim.NewWorldModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &worldModel{srv: srv, wm: wm}
}

// commandOf is the command a world-model request asks about.
func commandOf(r *modeltest.Request) string {
	u := r.Messages[len(r.Messages)-1].Content
	i := strings.LastIndex(u, "<command>\n")
	return strings.TrimSuffix(u[i+len("<command>\n"):], "\n</command>")
}

func reply(e trajectory.Execution) modeltest.Reply {
	b, _ := json.Marshal(e)
	return modeltest.Text(string(b))
}

// recordReal runs the policy on the real backend with contexts recorded
// and returns the real outputs of its classified commands, by command and
// occurrence ("CMD#N"), in order.
func recordReal(t *testing.T, h *simHarness) (map[string]trajectory.Execution, *trajectory.Trajectory) {
	t.Helper()
	tr := h.run(t, &sim.Options{RecordOnly: true})
	outs := map[string]trajectory.Execution{}
	seen := map[string]int{}
	for _, st := range tr.Steps {
		if st.Sim == nil {
			continue
		}
		if st.Sim.Real == nil || st.Sim.Context == nil || st.Sim.Observed != sim.ObserveReal {
			t.Fatalf("recorded step %q: %+v, want a context and a real run", st.Action, st.Sim)
		}
		seen[st.Action]++
		outs[fmt.Sprintf("%s#%d", st.Action, seen[st.Action])] = *st.Sim.Real
	}
	if len(outs) != classified {
		t.Fatalf("recorded %d classified commands, want %d", len(outs), classified)
	}
	return outs, tr
}

// replay answers each command with the real output of its occurrence;
// wrong, when set, alters the n-th answer (from 1).
func replay(outs map[string]trajectory.Execution, wrong func(n int, e *trajectory.Execution)) func(string, *modeltest.Request) modeltest.Reply {
	var mu sync.Mutex
	seen := map[string]int{}
	n := 0
	return func(cmd string, _ *modeltest.Request) modeltest.Reply {
		mu.Lock()
		defer mu.Unlock()
		seen[cmd]++
		n++
		e := outs[fmt.Sprintf("%s#%d", cmd, seen[cmd])]
		if wrong != nil {
			wrong(n, &e)
		}
		return reply(e)
	}
}

// TestReplayAndWrongWorldModels runs the scripted policy three times on
// the test repository: on the real backend with contexts recorded, then
// on the sim backend corrected at every command against a world model
// replaying those real outputs (which must agree at 100%) and against
// one that flips every fourth exit code (measured at 75%). It also
// checks that no request held the gold patch or the hidden tests, and
// that cwm export's transition rows are the requests the world model got.
func TestReplayAndWrongWorldModels(t *testing.T) {
	h := newSimHarness(t, policy)
	outs, realTr := recordReal(t, h)

	t.Run("replay", func(t *testing.T) {
		w := startWorldModel(t, sim.WorldModelConfig{}, replay(outs, nil))
		tr := h.run(t, &sim.Options{World: w.wm, RealEvery: 1})
		f := sim.Measure([]*trajectory.Trajectory{tr}, 0)
		var table strings.Builder
		f.Write(&table)
		t.Logf("cwm eval sim of the replay:\n%s", table.String())
		if f.All.Pairs != classified || f.All.ExitCode != classified || f.All.Normalized != classified {
			t.Errorf("replay: pairs %d, exit codes agree %d, normalised %d; want %d each", f.All.Pairs, f.All.ExitCode, f.All.Normalized, classified)
		}
		if f.All.TestPairs != 3 || f.All.TestOutcomes != 3 || f.All.Tests == 0 || f.All.TestsAgree != f.All.Tests {
			t.Errorf("replay: test outcomes %+v, want 3 of 3 pairs and every test agreeing", f.All)
		}
		if tr.Sim.Divergences != 0 || tr.Sim.Simulated != classified || tr.Sim.RealRuns != classified {
			t.Errorf("replay: summary %+v, want %d simulated, %d real runs, no divergence", tr.Sim, classified, classified)
		}
		reqs := w.srv.Requests()
		if len(reqs) != classified {
			t.Fatalf("world model got %d requests, want %d", len(reqs), classified)
		}
		i := 0
		for _, st := range tr.Steps {
			if st.Sim == nil {
				continue
			}
			var got []model.Message
			for _, m := range reqs[i].Messages {
				got = append(got, model.Message{Role: m.Role, Content: m.Content})
			}
			if diff := cmp.Diff(sim.Messages(st.Sim.Context), got); diff != "" {
				t.Errorf("request %d is not sim.Messages of the recorded context (-want +got):\n%s", i, diff)
			}
			i++
		}
		for _, r := range reqs {
			for _, m := range r.Messages {
				for _, marker := range []string{goldMarker, testMarker} {
					if strings.Contains(m.Content, marker) {
						t.Errorf("a world-model request holds %s", marker)
					}
				}
			}
		}
	})

	t.Run("one in four exit codes flipped", func(t *testing.T) {
		flip := func(n int, e *trajectory.Execution) {
			if n%4 == 0 {
				e.ExitCode = map[bool]int{true: 1, false: 0}[e.ExitCode == 0]
			}
		}
		w := startWorldModel(t, sim.WorldModelConfig{}, replay(outs, flip))
		tr := h.run(t, &sim.Options{World: w.wm, RealEvery: 1, Observe: sim.ObserveReal})
		f := sim.Measure([]*trajectory.Trajectory{tr}, 0)
		if got, want := float64(f.All.ExitCode)/float64(f.All.Pairs), 0.75; got != want {
			t.Errorf("exit-code agreement = %v (%d of %d), want %v", got, f.All.ExitCode, f.All.Pairs, want)
		}
		if tr.Sim.Divergences != classified/4 {
			t.Errorf("divergences = %d, want %d", tr.Sim.Divergences, classified/4)
		}
	})

	t.Run("real every 2, no real run of the others", func(t *testing.T) {
		w := startWorldModel(t, sim.WorldModelConfig{}, replay(outs, nil))
		tr := h.run(t, &sim.Options{World: w.wm, RealEvery: 2})
		f := sim.Measure([]*trajectory.Trajectory{tr}, 0)
		if f.RealRuns != classified/2 || f.Avoided != 0.5 {
			t.Errorf("real runs %d, avoided %v; want %d and 0.5", f.RealRuns, f.Avoided, classified/2)
		}
	})

	t.Run("export rows are the requests", func(t *testing.T) {
		rows := export.TransitionRows(realTr, "example/calc")
		if len(rows) != classified {
			t.Fatalf("TransitionRows gave %d rows, want %d", len(rows), classified)
		}
		w := startWorldModel(t, sim.WorldModelConfig{}, replay(outs, nil))
		h.run(t, &sim.Options{World: w.wm})
		reqs := w.srv.Requests()
		if len(reqs) != len(rows) {
			t.Fatalf("world model got %d requests, want %d", len(reqs), len(rows))
		}
		for i, row := range rows {
			var got []export.TurnMessage
			for _, m := range reqs[i].Messages {
				got = append(got, export.TurnMessage{Role: m.Role, Content: m.Content, ToolCalls: []export.ToolCall{}})
			}
			if diff := cmp.Diff(row.Messages, got); diff != "" {
				t.Errorf("row %d's messages are not what the sim backend sent (-row +sent):\n%s", i, diff)
			}
			e, err := sim.ParseReply(row.Completion)
			if err != nil || e.ExitCode != realTr.Steps[0].Sim.Real.ExitCode && i == 0 {
				t.Errorf("row %d's completion %q: %v, %+v", i, row.Completion, err, e)
			}
		}
	})
}
