package sim

import (
	"fmt"

	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/trajectory"
)

// Load reads trajectories files for Measure, keeping of each trajectory
// only what Measure reads: its environment, its reward, its sim summary
// and the steps that have a sim record.
func Load(paths []string) ([]*trajectory.Trajectory, error) {
	var trs []*trajectory.Trajectory
	for _, p := range paths {
		err := jsonl.DecodeInput(p, func(_ int, tr trajectory.Trajectory) error {
			if tr.TaskID == "" {
				return errkind.New(errkind.Input, "not a trajectory (no task_id)")
			}
			trs = append(trs, Slim(&tr))
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read trajectories: %w", err)
		}
	}
	return trs, nil
}

// Slim is tr with only what Measure reads.
func Slim(tr *trajectory.Trajectory) *trajectory.Trajectory {
	s := &trajectory.Trajectory{TaskID: tr.TaskID, Sample: tr.Sample, EnvID: tr.EnvID, Reward: tr.Reward, Resolved: tr.Resolved, Sim: tr.Sim}
	for _, st := range tr.Steps {
		if st.Sim != nil {
			s.Steps = append(s.Steps, trajectory.Step{Turn: st.Turn, Tool: st.Tool, Sim: st.Sim})
		}
	}
	return s
}
