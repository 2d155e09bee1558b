package envserver

import (
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/jsonl"
	"cwm/internal/model/modeltest"
	"cwm/internal/sim"
	"cwm/internal/trajectory"
)

// simServer is a world and reward model endpoint: commands print
// SIMULATED, and every patch is predicted resolved with reward 1.
func simServer(t *testing.T) *sim.Options {
	t.Helper()
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		if strings.Contains(r.Messages[0].Content, "reward model") {
			return modeltest.Text(`{"resolved": true, "reward": 1}`)
		}
		return modeltest.Text(`{"stdout": "SIMULATED\n", "stderr": "", "exit_code": 0}`)
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg := sim.WorldModelConfig{BaseURL: srv.URL, Model: "world"}
	w, err := sim.NewWorldModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model = "reward"
	rm, err := sim.NewRewardModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &sim.Options{World: w, Reward: rm}
}

// A swe reset may ask for the sim backend: reading commands run for real,
// the test run is the world model's (and writes nothing), a clone keeps
// the backend, and the reward is the reward model's, flagged predicted;
// the trajectory records the pairs and the predicted reward apart from
// the real one. A server without a world model refuses such a reset.
func TestSWESimBackend(t *testing.T) {
	out := filepath.Join(t.TempDir(), "traj.jsonl")
	opts := simServer(t)
	f := newFixture(t, func(o *Options) {
		o.Trajectories = out
		o.Sim = opts
	})
	w := f.dial("")
	if r := w.call(`{"type": "reset", "data": {"task_id": "calc-1", "backend": "sim"}}`); errorCode(r) != "" {
		t.Fatalf("reset: %v", r)
	}
	if o := obs(w.call(bash("python3 -m unittest -q test_calc > /repo/ran.txt; echo real"))); o["output"] != "SIMULATED" {
		t.Errorf("a test run on the sim backend: %v, want the world model's output", o)
	}
	if o := obs(w.call(bash("ls /repo/ran.txt 2>&1 | grep -c 'No such'"))); o["output"] != "1" {
		t.Errorf("a simulated command wrote a file: %v", o)
	}
	r := w.call(`{"type": "clone"}`)
	id, _ := r["data"].(map[string]any)["episode_id"].(string)
	w2 := f.dial("?episode_id=" + id)
	if o := obs(w2.call(bash("python3 -c 'print(1)'"))); o["output"] != "SIMULATED" {
		t.Errorf("in the clone: %v, want the sim backend", o)
	}
	w.call(map[string]any{"type": "step", "data": map[string]any{"text": "<tool: edit>\n" + fixAdd + "\n</tool>"}})
	w.call(bash("git diff > /tmp/fix.patch"))
	d := w.call(map[string]any{"type": "step", "data": map[string]any{"text": "<tool: submit>\n/tmp/fix.patch\n</tool>"}})["data"].(map[string]any)
	meta := d["observation"].(map[string]any)["metadata"].(map[string]any)
	if d["done"] != true || d["reward"] != 1.0 || meta["reward_predicted"] != true || meta["backend"] != "sim" {
		t.Errorf("end: done %v reward %v metadata %v; want done, reward 1 predicted, backend sim", d["done"], d["reward"], meta)
	}
	var trs []trajectory.Trajectory
	if err := jsonl.Decode(out, func(_ int, tr trajectory.Trajectory) error { trs = append(trs, tr); return nil }); err != nil {
		t.Fatal(err)
	}
	tr := trs[0]
	if tr.Sim == nil || tr.Sim.Simulated != 1 || tr.Sim.PredictedReward == nil || *tr.Sim.PredictedReward != 1 || tr.Reward != nil {
		t.Errorf("trajectory: sim %+v, reward %v; want 1 simulated, predicted reward 1, real reward null", tr.Sim, tr.Reward)
	}
	if st := tr.Steps[0]; st.Sim == nil || st.Sim.Kind != sim.KindTest || st.Sim.Observed != sim.ObserveSim || st.Sim.Context == nil {
		t.Errorf("first step's record: %+v", st.Sim)
	}

	plain := newFixture(t, nil)
	if r := plain.dial("").call(`{"type": "reset", "data": {"task_id": "calc-1", "backend": "sim"}}`); errorCode(r) != CodeValidationError ||
		!strings.Contains(r["data"].(map[string]any)["message"].(string), "no world model") {
		t.Errorf("backend sim without a world model: %v, want a validation error naming it", r)
	}
}
