package cli

import (
	"fmt"
	"strconv"

	"cwm/internal/batch"
	"cwm/internal/jsonl"
	"cwm/internal/lazyre"
	"cwm/internal/reward"
	"cwm/internal/task"
	"cwm/internal/tracer"
	"cwm/internal/trajectory"
)

// The batch stages not yet declared in their domain packages, as cwm
// merge reads their outputs.
var (
	traceFuncStage = batch.Stage{Name: "trace func", LineKey: jsonl.Field("id"), ItemKey: traceFuncItem, Expected: traceFuncInputs}
	// Episodes are cut from a test's recording: a test may give none.
	traceRepoStage   = batch.Stage{Name: "trace repo", LineKey: jsonl.Field("id"), ItemKey: jsonl.Field("test")}
	tasksMutateStage = batch.Stage{Name: "tasks mutate", LineKey: jsonl.Field("instance_id"), ItemKey: mutateItem, Sidecars: []batch.Sidecar{decisionsSidecar}}
	// A commit task's line does not name its commit in full: its
	// placement is not checked, its decisions are.
	tasksCommitsStage  = batch.Stage{Name: "tasks commits", LineKey: jsonl.Field("instance_id"), ItemKey: noItem, Sidecars: []batch.Sidecar{decisionsSidecar}}
	tasksValidateStage = batch.Stage{Name: "tasks validate", LineKey: jsonl.Field("instance_id"), Expected: tasksInputs}
	rewardStage        = batch.Stage{Name: "reward", LineKey: rewardLine, ItemKey: rewardGroup}
	forageStage        = batch.Stage{Name: "forage", LineKey: trajectory.LineKey, Expected: forageInputs}
)

var decisionsSidecar = batch.Sidecar{Suffix: ".decisions.jsonl", Key: jsonl.Field("key")}

// fuzzSuffix ends the ids of trace func's fuzzed inputs: "<id>/fuzz-<k>".
var fuzzSuffix = lazyre.New(`/fuzz-[0-9]+$`)

func traceFuncItem(line []byte) (string, error) {
	id, err := jsonl.Field("id")(line)
	return fuzzSuffix().ReplaceAllString(id, ""), err
}

func traceFuncInputs(inputs []string, _ map[string]string) ([]string, error) {
	var keys []string
	for _, in := range inputs {
		funcs, err := tracer.ReadFuncs(in)
		if err != nil {
			return nil, err
		}
		for _, f := range funcs {
			keys = append(keys, f.ID)
		}
	}
	return keys, nil
}

// mutateItem is a mutate-fix task's function, as tasks.Mutate shards it.
func mutateItem(line []byte) (string, error) {
	var t struct{ File, Function string }
	if err := jsonl.Unmarshal(line, &t); err != nil {
		return "", err
	}
	if t.File == "" || t.Function == "" {
		return "", fmt.Errorf("task without file and function: not from cwm tasks mutate")
	}
	return t.File + "\x00" + t.Function, nil
}

func noItem([]byte) (string, error) { return "", nil }

func tasksInputs(inputs []string, _ map[string]string) ([]string, error) {
	var keys []string
	for _, in := range inputs {
		ts, err := task.Load(in)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			keys = append(keys, t.InstanceID)
		}
	}
	return keys, nil
}

func rewardLine(line []byte) (string, error) {
	k, _, err := reward.ScoredKeys(line)
	return k, err
}

func rewardGroup(line []byte) (string, error) {
	_, g, err := reward.ScoredKeys(line)
	return g, err
}

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
