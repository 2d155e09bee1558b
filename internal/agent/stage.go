package agent

import (
	"fmt"
	"strconv"

	"cwm/internal/batch"
	"cwm/internal/task"
	"cwm/internal/trajectory"
)

// ForageStage is cwm forage as a batch stage: a trajectory per (task,
// sample) pair, keyed as NewForage resumes and shards them.
var ForageStage = batch.Stage{Name: "forage", LineKey: trajectory.LineKey, Expected: foragePairs}

// foragePairs are the (task, sample) pairs of the tasks files, for the
// "samples" its shards' markers record.
func foragePairs(inputs []string, params map[string]string) ([]string, error) {
	samples, err := strconv.Atoi(params["samples"])
	if err != nil || samples < 1 {
		return nil, fmt.Errorf("the shards' markers do not say how many samples per task")
	}
	ts, err := task.LoadAll(inputs)
	var keys []string
	for i := range ts {
		for s := range samples {
			keys = append(keys, pair{&ts[i], s}.key())
		}
	}
	return keys, err
}
