package report

import (
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/sim"
	"cwm/internal/trajectory"
)

// A trajectories file with sim records gets cwm eval sim's table, the
// same text the command prints; one without gets none.
func TestTrajectoriesSimTable(t *testing.T) {
	dir := t.TempDir()
	pair := func(turn, predicted, real int) trajectory.Step {
		return trajectory.Step{Turn: turn, Tool: "bash", Action: "python3 x.py", Sim: &trajectory.Sim{Kind: sim.KindPython, Observed: sim.ObserveSim,
			Predicted: &trajectory.Execution{Stdout: "ok", ExitCode: predicted}, Real: &trajectory.Execution{Stdout: "ok", ExitCode: real}, RealSeconds: 1}}
	}
	withSim := &trajectory.Trajectory{TaskID: "a__b-1", EnvID: "env-1", Messages: nil, Steps: []trajectory.Step{pair(1, 0, 0), pair(2, 0, 1)}}
	plain := &trajectory.Trajectory{TaskID: "a__b-2", Steps: []trajectory.Step{{Turn: 1, Tool: "bash", Action: "ls"}}}
	simPath, plainPath := filepath.Join(dir, "sim.jsonl"), filepath.Join(dir, "plain.jsonl")
	writeJSONL(t, simPath, withSim)
	writeJSONL(t, plainPath, plain)
	r, err := Build("sim", []string{simPath, plainPath})
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	sim.Measure([]*trajectory.Trajectory{sim.Slim(withSim)}, -1).Write(&want)
	if len(r.Traj) != 2 || r.Traj[0].Sim != want.String() || r.Traj[1].Sim != "" {
		t.Fatalf("sections' sim tables: %q, want %q and none", []string{r.Traj[0].Sim, r.Traj[1].Sim}, want.String())
	}
	if !strings.Contains(r.Traj[0].Sim, "python  2      50.0%") {
		t.Errorf("table %q: want python's exit-code agreement at 50%%", r.Traj[0].Sim)
	}
	var page strings.Builder
	if err := Render(&page, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "cwm eval sim") {
		t.Errorf("the page does not show the sim table")
	}
}
