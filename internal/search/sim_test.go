package search

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/sim"
	"cwm/internal/trajectory"
)

// runAdd is the command of simPolicy that executes code: the classifier
// sends it to the world model.
const runAdd = "python3 -c 'from calc import add; print(add(2, 3))'"

// simPolicy is policy with a run of the code between the edit and the
// submission: seed 1's first reply is the fix, any other seed's the
// wrong one.
func simPolicy(r *modeltest.Request) modeltest.Reply {
	switch r.Turn() {
	case 0:
		return policy(r)
	case 1:
		return modeltest.Tool("bash", runAdd)
	case 2:
		return modeltest.Tool("bash", "git diff > /tmp/fix.patch")
	}
	return modeltest.Tool("submit", "/tmp/fix.patch")
}

// worldModels answers runAdd as it would run on the diff it is given
// (a world model that is right), and, asked by the model name "reward",
// predicts the reward of the patch from whether it holds the fix.
func worldModels(r *modeltest.Request) modeltest.Reply {
	user := r.Messages[len(r.Messages)-1].Content
	fixed := strings.Contains(user, "+    return a + b")
	var v any
	switch {
	case r.Model == "reward" && fixed:
		v = map[string]any{"resolved": true, "reward": 1}
	case r.Model == "reward":
		v = map[string]any{"resolved": false, "reward": 0}
	case r.Model == "wrong":
		v = trajectory.Execution{Stdout: "7\n"}
	case fixed:
		v = trajectory.Execution{Stdout: "5\n"}
	default:
		v = trajectory.Execution{Stdout: "1\n"} // b - a
	}
	b, _ := json.Marshal(v)
	return modeltest.Text(string(b))
}

// On the sim backend the search finds the fix as on the real one, the
// runs of the code answered by the world model (executions avoided); a
// correction at every command runs each for real too, and agrees (and,
// against a world model always wrong, disagrees every time, the real
// output shown); with the reward model no grading runs and the best
// reward is flagged predicted.
func TestSearchOnSimBackend(t *testing.T) {
	h := newHarness(t)
	srv, err := modeltest.Start(worldModels, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg := sim.WorldModelConfig{BaseURL: srv.URL, Model: "world", Timeout: time.Minute, Attempts: 2}
	wm, err := sim.NewWorldModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model = "wrong"
	wrong, err := sim.NewWorldModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model = "reward"
	rm, err := sim.NewRewardModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := modeltest.Start(simPolicy, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pol.Close)
	pc, err := model.NewClient(model.ClientConfig{BaseURL: pol.URL, Model: "policy", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name        string
		sim         sim.Options
		predicted   bool
		divergences int
	}{
		{name: "simulated", sim: sim.Options{World: wm}},
		{name: "corrected", sim: sim.Options{World: wm, RealEvery: 1}},
		{name: "reward model", sim: sim.Options{World: wm, Reward: rm}, predicted: true},
		// A world model always wrong, corrected at every command with the
		// real output shown: every pair diverges.
		{name: "wrong, corrected", sim: sim.Options{World: wrong, RealEvery: 1, Observe: sim.ObserveReal}, divergences: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := h.opts
			o.Algo, o.Width, o.Depth, o.Sim, o.Policy = Beam, 2, 4, &tc.sim, pc
			res, err := Run(context.Background(), &o, h.task, h.env)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			s := res.Summary
			if s.BestReward == nil || *s.BestReward != 1 {
				t.Fatalf("best reward %v, want 1 (patch %q)", s.BestReward, res.Best.Patch)
			}
			// Each of the four depth-2 states (two samples from each of the
			// two kept) ran runAdd once.
			runs, avoided := 4, 4
			if tc.sim.RealEvery == 1 {
				avoided = 0
			}
			if s.ExecsAvoided != avoided || s.WorldModelCalls != runs || s.Divergences != tc.divergences {
				t.Errorf("summary %+v: want %d executions avoided of %d world-model calls, %d divergences", s, avoided, runs, tc.divergences)
			}
			var step *trajectory.Step
			for i := range res.Best.Steps {
				if res.Best.Steps[i].Action == runAdd {
					step = &res.Best.Steps[i]
				}
			}
			if step == nil || step.Sim == nil || step.Sim.Predicted == nil || step.Observation != "5" {
				t.Fatalf("best path's run of the code: %+v, want a prediction and 5 shown", step)
			}
			if (step.Sim.Real != nil) != (tc.sim.RealEvery == 1) || step.Sim.Real != nil && step.Sim.Real.Stdout != "5" {
				t.Errorf("its real run %+v, want one (printing 5) only when corrected", step.Sim.Real)
			}
			if simulated := 1 - tc.divergences/4; res.Best.Sim == nil || res.Best.Sim.Backend != "sim" || res.Best.Sim.Simulated != simulated ||
				res.Best.Sim.Divergences != tc.divergences/4 {
				t.Errorf("best trajectory's sim summary %+v, want the sim backend, %d simulated command shown", res.Best.Sim, simulated)
			}
			if tc.predicted {
				if s.Gradings != 0 || s.RewardCalls < 1 || res.Best.Reward != nil ||
					res.Best.Sim.PredictedReward == nil || *res.Best.Sim.PredictedReward != 1 || !res.Tree[s.BestNode].RewardPredicted {
					t.Errorf("summary %+v, best reward %v, predicted %v: want no grading, the reward model's 1 flagged predicted",
						s, res.Best.Reward, res.Best.Sim.PredictedReward)
				}
			} else if s.Gradings < 1 || res.Best.Resolved == nil || !*res.Best.Resolved {
				t.Errorf("summary %+v: want the fix graded for real", s)
			}
		})
	}
}
