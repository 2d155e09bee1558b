package cli

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"cwm/internal/batch"
	"cwm/internal/eval"
	"cwm/internal/jsonl"
	"cwm/internal/lazyre"
	"cwm/internal/reward"
	"cwm/internal/task"
	"cwm/internal/tracer"
	"cwm/internal/trajectory"
)

// mergeStage is what cwm merge needs to know of a batch stage's output: a
// line's own key, the key of the item it came from (which decided its
// shard), the files written beside the output, and, for stages that write
// a line for every item, the keys of the items in the input.
//
// A new batch stage adds a row here and marks its shards
// (batch.StartShard, Finish) under the same name.
type mergeStage struct {
	lineKey  func([]byte) (string, error)
	itemKey  func([]byte) (string, error) // nil: lineKey
	sidecars []batch.Sidecar
	// expected lists the items of the run from its inputs and params
	// (nil: the stage cannot tell which items have no line).
	expected func(inputs []string, params map[string]string) ([]string, error)
}

var decisionsSidecar = batch.Sidecar{Suffix: ".decisions.jsonl", Key: jsonl.Field("key")}

var mergeStages = map[string]mergeStage{
	"trace func": {lineKey: jsonl.Field("id"), itemKey: traceFuncItem, expected: traceFuncInputs},
	// Episodes are cut from a test's recording: a test may give none.
	"trace repo":   {lineKey: jsonl.Field("id"), itemKey: jsonl.Field("test")},
	"tasks mutate": {lineKey: jsonl.Field("instance_id"), itemKey: mutateItem, sidecars: []batch.Sidecar{decisionsSidecar}},
	// A commit task's line does not name its commit in full: its
	// placement is not checked, its decisions are.
	"tasks commits":  {lineKey: jsonl.Field("instance_id"), itemKey: noItem, sidecars: []batch.Sidecar{decisionsSidecar}},
	"tasks validate": {lineKey: jsonl.Field("instance_id"), expected: tasksInputs},
	"reward":         {lineKey: rewardLine, itemKey: rewardGroup},
	"forage":         {lineKey: trajectory.LineKey, expected: forageInputs},
	"eval cruxeval":  {lineKey: eval.SampleLineKey},
	"eval halt":      {lineKey: eval.SampleLineKey},
	"eval fidelity":  {lineKey: eval.FidelityLineKey},
	"eval observe":   {lineKey: eval.ObserveLineKey},
	"select":         {lineKey: jsonl.Field("instance_id")},
}

func mergeStageNames() string {
	var names []string
	for n := range mergeStages {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

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
