package cli

import (
	"sort"
	"strings"

	"cwm/internal/agent"
	"cwm/internal/batch"
	"cwm/internal/eval"
	"cwm/internal/narrate"
	"cwm/internal/reward"
	"cwm/internal/selection"
	"cwm/internal/tasks"
	"cwm/internal/tracer"
)

// batchStages are the stages cwm merge joins the shards of. Each is a
// value of its domain package, declared beside the code that makes its
// keys, and the one its command runs on (batch.RunStage or Stage.Start),
// so that merge reads an output by the keys that wrote it.
func batchStages() []*batch.Stage {
	return []*batch.Stage{&eval.CruxEvalStage, &eval.HaltStage, &eval.FidelityStage, &eval.ObserveStage,
		&selection.Stage, &tasks.ValidateStage, &tracer.FuncStage, &tracer.RepoStage, &tracer.ProgStage, &tracer.TestsStage, &reward.Stage,
		&tasks.MutateStage, &tasks.CommitsStage, &agent.ForageStage, &narrate.Stage}
}

// findStage is the batch stage called name; nil when there is none.
func findStage(name string) *batch.Stage {
	for _, s := range batchStages() {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// stageNames lists the batch stages' names, sorted, for help and errors.
func stageNames() string {
	var names []string
	for _, s := range batchStages() {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
