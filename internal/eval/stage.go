package eval

import (
	"cwm/internal/batch"
	"cwm/internal/model"
)

// The evals as batch stages: what cwm merge reads their outputs by.
var (
	CruxEvalStage = batch.Stage{Name: "eval cruxeval", LineKey: SampleLineKey}
	HaltStage     = batch.Stage{Name: "eval halt", LineKey: SampleLineKey}
	FidelityStage = batch.Stage{Name: "eval fidelity", LineKey: FidelityLineKey}
	ObserveStage  = batch.Stage{Name: "eval observe", LineKey: ObserveLineKey}
)

// modelErrorsAside is every eval's batch.Job.Aside: a model server
// failing an item after its retries is counted and reported (to report,
// when set), not written, so that the next run retries it.
func modelErrorsAside[T any](report func(T, error)) func(T, error) string {
	return func(it T, err error) string {
		var merr *model.ModelError
		if !asModelError(err, &merr) {
			return ""
		}
		if report != nil {
			report(it, err)
		}
		return "model_error"
	}
}

// inputs is the marker's input: the file the items came from, if any.
func inputs(file string) []string {
	if file == "" {
		return nil
	}
	return []string{file}
}
