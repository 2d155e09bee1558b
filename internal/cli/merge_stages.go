package cli

import (
	"fmt"
	"strconv"

	"cwm/internal/batch"
	"cwm/internal/task"
	"cwm/internal/trajectory"
)

// The batch stages not yet declared in their domain packages, as cwm
// merge reads their outputs.
var (
	forageStage = batch.Stage{Name: "forage", LineKey: trajectory.LineKey, Expected: forageInputs}
)

// forageInputs are the (task, sample) pairs of the tasks files.
func forageInputs(inputs []string, params map[string]string) ([]string, error) {
	samples, err := strconv.Atoi(params["samples"])
	if err != nil || samples < 1 {
		return nil, fmt.Errorf("the shards' markers do not say how many samples per task")
	}
	var keys []string
	for _, in := range inputs {
		ts, err := task.Load(in)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			for s := range samples {
				keys = append(keys, trajectory.Key(t.InstanceID, s))
			}
		}
	}
	return keys, nil
}
