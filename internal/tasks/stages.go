package tasks

import (
	"fmt"

	"cwm/internal/batch"
	"cwm/internal/jsonl"
	"cwm/internal/task"
)

// The tasks commands as batch stages, keyed as the code that shards and
// resumes them keys their items.
var (
	// MutateStage: a task's item is its function (functionKey), which
	// decided its shard; decisions are written beside the tasks.
	MutateStage = batch.Stage{Name: "tasks mutate", LineKey: jsonl.Field("instance_id"), ItemKey: mutateItem,
		Sidecars: []batch.Sidecar{decisionsSidecar}}
	// CommitsStage: a commit task's line does not name its commit in
	// full, so its placement is not checked; its decisions are.
	CommitsStage = batch.Stage{Name: "tasks commits", LineKey: jsonl.Field("instance_id"), ItemKey: noItem,
		Sidecars: []batch.Sidecar{decisionsSidecar}}
	// ValidateStage writes a verdict for every task of its input.
	ValidateStage = batch.Stage{Name: "tasks validate", LineKey: jsonl.Field("instance_id"), Expected: inputTasks}
)

var decisionsSidecar = batch.Sidecar{Suffix: decisionsPath(""), Key: jsonl.Field("key")}

// functionKey is the key Mutate shards a function by.
func functionKey(file, function string) string { return file + "\x00" + function }

// mutateItem is a mutate-fix task's function, as Mutate shards it.
func mutateItem(line []byte) (string, error) {
	var t struct{ File, Function string }
	if err := jsonl.Unmarshal(line, &t); err != nil {
		return "", err
	}
	if t.File == "" || t.Function == "" {
		return "", fmt.Errorf("task without file and function: not from cwm tasks mutate")
	}
	return functionKey(t.File, t.Function), nil
}

func noItem([]byte) (string, error) { return "", nil }

// inputTasks are the instance ids of the tasks files.
func inputTasks(inputs []string, _ map[string]string) ([]string, error) {
	ts, err := task.LoadAll(inputs)
	var keys []string
	for _, t := range ts {
		keys = append(keys, t.InstanceID)
	}
	return keys, err
}
