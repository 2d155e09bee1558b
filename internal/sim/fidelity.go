package sim

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"text/tabwriter"

	"cwm/internal/logparse"
	"cwm/internal/trajectory"
)

// Agreement is how often a world model's predictions matched the real
// runs of the same commands, over the recorded pairs of one command kind.
type Agreement struct {
	// Pairs are the steps with both a prediction and a real run.
	Pairs int `json:"pairs"`
	// ExitCode counts pairs with the same exit code; Exact the ones with
	// the same observed text; Normalized the ones equal after Normalize.
	ExitCode   int `json:"exit_code"`
	Exact      int `json:"exact"`
	Normalized int `json:"normalized"`
	// TestPairs are the pairs in which pytest's report (logparse.Pytest,
	// pytest -rA's "STATUS id" lines) names a test on either side;
	// TestOutcomes the ones whose every test has the same status on both.
	// Tests counts the tests the real side names, TestsAgree those the
	// prediction gives the same status.
	TestPairs    int `json:"test_pairs"`
	TestOutcomes int `json:"test_outcomes"`
	Tests        int `json:"tests"`
	TestsAgree   int `json:"tests_agree"`
}

// Fidelity is cwm eval sim's measure of a set of trajectories.
type Fidelity struct {
	Trajectories int `json:"trajectories"`
	// Classified are the commands the classifier sent (or, on the real
	// backend with recorded contexts, would send) to the world model.
	Classified int `json:"classified"`
	// Simulated are those the agent saw the world model's answer of;
	// RealRuns those that ran for real; Avoided is the share of
	// classified commands that did not run for real.
	Simulated int            `json:"simulated"`
	RealRuns  int            `json:"real_runs"`
	Avoided   float64        `json:"avoided"`
	Fallbacks int            `json:"fallbacks"`
	Failures  map[string]int `json:"failures"`
	// All is the agreement over every pair; ByKind per command kind.
	All    Agreement            `json:"all"`
	ByKind map[string]Agreement `json:"by_kind"`
	// Reward compares the reward model's prediction with the real reward
	// of the episodes that have both.
	Reward RewardAgreement `json:"reward"`
	Cost   Cost            `json:"cost"`
}

// RewardAgreement compares predicted and real rewards.
type RewardAgreement struct {
	Episodes int `json:"episodes"`
	// Agree counts episodes whose predicted reward equals the real one.
	Agree int `json:"agree"`
}

// Cost is what simulating a step costs against running it.
type Cost struct {
	// ModelLatency is the assumed seconds of one world-model answer (the
	// --model-latency parameter); MeasuredModelSeconds the mean measured
	// in the recorded steps.
	ModelLatency         float64 `json:"model_latency"`
	MeasuredModelSeconds float64 `json:"measured_model_seconds"`
	// OverheadSeconds is cwm's own mean time per simulated step (context,
	// rendering, checking the reply), over OverheadSteps steps.
	OverheadSeconds float64 `json:"overhead_seconds"`
	OverheadSteps   int     `json:"overhead_steps"`
	// Envs are per environment: the real step's mean time, measured from
	// the recorded real runs of classified commands, and the break-even
	// model latency (real time minus cwm's overhead) below which
	// simulating a step is faster than running it.
	Envs []EnvCost `json:"envs"`
}

// EnvCost is one environment's real step time and break-even latency.
type EnvCost struct {
	Env             string  `json:"env"`
	RealSteps       int     `json:"real_steps"`
	RealSeconds     float64 `json:"real_seconds"`
	BreakEven       float64 `json:"break_even_seconds"`
	SavedPerStep    float64 `json:"saved_per_step_seconds"`
	FasterSimulated bool    `json:"faster_simulated"`
}

// HasPairs reports whether trajectories hold sim records at all, which
// is when cwm report shows the fidelity section.
func HasPairs(trs []*trajectory.Trajectory) bool {
	for _, tr := range trs {
		for _, st := range tr.Steps {
			if st.Sim != nil {
				return true
			}
		}
	}
	return false
}

// Measure computes the fidelity of trajectories' recorded pairs, with
// modelLatency the assumed seconds of one world-model answer (negative:
// the mean measured in the records).
func Measure(trs []*trajectory.Trajectory, modelLatency float64) *Fidelity {
	f := &Fidelity{Trajectories: len(trs), Failures: map[string]int{}, ByKind: map[string]Agreement{}}
	f.Cost.ModelLatency = modelLatency
	real := map[string][]float64{}
	var modelSecs float64
	modelSteps := 0
	for _, tr := range trs {
		for _, st := range tr.Steps {
			r := st.Sim
			if r == nil {
				continue
			}
			f.Classified++
			if r.Predicted != nil && r.Observed == ObserveSim {
				f.Simulated++
			}
			if r.Real != nil {
				f.RealRuns++
				real[tr.EnvID] = append(real[tr.EnvID], r.RealSeconds)
			}
			if r.Predicted == nil && r.Fallback != "" {
				f.Fallbacks++
			}
			for k, n := range r.Failures {
				f.Failures[k] += n
			}
			if r.Predicted != nil {
				f.Cost.OverheadSeconds += r.OverheadSeconds
				f.Cost.OverheadSteps++
				modelSecs += r.ModelSeconds
				modelSteps++
			}
			if r.Predicted == nil || r.Real == nil {
				continue
			}
			a := f.ByKind[r.Kind]
			a.add(r.Predicted, r.Real)
			f.ByKind[r.Kind] = a
			f.All.add(r.Predicted, r.Real)
		}
		if tr.Sim != nil && tr.Sim.PredictedReward != nil && tr.Reward != nil {
			f.Reward.Episodes++
			if *tr.Sim.PredictedReward == *tr.Reward {
				f.Reward.Agree++
			}
		}
	}
	if f.Classified > 0 {
		f.Avoided = float64(f.Classified-f.RealRuns) / float64(f.Classified)
	}
	if f.Cost.OverheadSteps > 0 {
		f.Cost.OverheadSeconds /= float64(f.Cost.OverheadSteps)
	}
	if modelSteps > 0 {
		f.Cost.MeasuredModelSeconds = modelSecs / float64(modelSteps)
	}
	if modelLatency < 0 {
		modelLatency = f.Cost.MeasuredModelSeconds
		f.Cost.ModelLatency = modelLatency
	}
	for _, id := range slices.Sorted(maps.Keys(real)) {
		secs := real[id]
		var sum float64
		for _, s := range secs {
			sum += s
		}
		e := EnvCost{Env: id, RealSteps: len(secs), RealSeconds: sum / float64(len(secs))}
		e.BreakEven = e.RealSeconds - f.Cost.OverheadSeconds
		e.SavedPerStep = e.RealSeconds - f.Cost.OverheadSeconds - modelLatency
		e.FasterSimulated = e.SavedPerStep > 0
		f.Cost.Envs = append(f.Cost.Envs, e)
	}
	return f
}

func (a *Agreement) add(pred, real *trajectory.Execution) {
	a.Pairs++
	if pred.ExitCode == real.ExitCode {
		a.ExitCode++
	}
	p, r := ObservedText(pred), ObservedText(real)
	if p == r {
		a.Exact++
	}
	if Normalize(p) == Normalize(r) {
		a.Normalized++
	}
	pt, rt := logparse.Pytest(p), logparse.Pytest(r)
	if len(pt) == 0 && len(rt) == 0 {
		return
	}
	a.TestPairs++
	if maps.Equal(pt, rt) {
		a.TestOutcomes++
	}
	for id, status := range rt {
		a.Tests++
		if pt[id] == status {
			a.TestsAgree++
		}
	}
}

func rate(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}

// Write prints the fidelity as tables.
func (f *Fidelity) Write(w io.Writer) {
	fmt.Fprintf(w, "trajectories %d, classified commands %d: simulated %d, run for real %d (%s avoided), fallbacks %d\n",
		f.Trajectories, f.Classified, f.Simulated, f.RealRuns, rate(f.Classified-f.RealRuns, f.Classified), f.Fallbacks)
	if len(f.Failures) > 0 {
		fmt.Fprintf(w, "failed world-model attempts:")
		for _, k := range slices.Sorted(maps.Keys(f.Failures)) {
			fmt.Fprintf(w, " %s %d", k, f.Failures[k])
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "kind\tpairs\texit code\texact\tnormalised\ttest outcomes\ttests")
	kinds := slices.Sorted(maps.Keys(f.ByKind))
	row := func(name string, a Agreement) {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s of %d\t%s of %d\n", name, a.Pairs, rate(a.ExitCode, a.Pairs), rate(a.Exact, a.Pairs),
			rate(a.Normalized, a.Pairs), rate(a.TestOutcomes, a.TestPairs), a.TestPairs, rate(a.TestsAgree, a.Tests), a.Tests)
	}
	for _, k := range kinds {
		row(k, f.ByKind[k])
	}
	row("all", f.All)
	tw.Flush()
	fmt.Fprintf(w, "reward agreement: %s of %d episodes\n", rate(f.Reward.Agree, f.Reward.Episodes), f.Reward.Episodes)
	fmt.Fprintf(w, "cwm's overhead per simulated step: %.4fs over %d steps; world model measured %.3fs, assumed %.3fs\n",
		f.Cost.OverheadSeconds, f.Cost.OverheadSteps, f.Cost.MeasuredModelSeconds, f.Cost.ModelLatency)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "env\treal steps\treal step\tbreak-even latency\tsaved per step")
	sort.SliceStable(f.Cost.Envs, func(i, j int) bool { return f.Cost.Envs[i].Env < f.Cost.Envs[j].Env })
	for _, e := range f.Cost.Envs {
		fmt.Fprintf(tw, "%s\t%d\t%.3fs\t%.3fs\t%.3fs\n", e.Env, e.RealSteps, e.RealSeconds, e.BreakEven, e.SavedPerStep)
	}
	tw.Flush()
}
