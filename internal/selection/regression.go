package selection

import "cwm/internal/task"

// Regression sets: which of the environment's passing tests best@k's
// regression set is drawn from (each must also pass on the unpatched
// tree).
const (
	// RegressionExisting is CWM's: the existing tests that pass before
	// the patch, as Agentless runs them, PASS_TO_PASS included (those
	// tests are in the repository the agent sees). Only FAIL_TO_PASS is
	// left out: those are the tests whose hidden versions arrive with the
	// test patch and grade the task.
	RegressionExisting = "existing"
	// RegressionStrict leaves out every test the task grades with,
	// FAIL_TO_PASS and PASS_TO_PASS: a smaller set, which never runs a
	// test of the grading.
	RegressionStrict = "strict"
)

// RegressionPool is the environment's passing tests that set allows for
// t, in their order.
func RegressionPool(passing []string, t *task.Task, set string) []string {
	left := map[string]bool{}
	for _, id := range t.FailToPass {
		left[id] = true
	}
	if set == RegressionStrict {
		for _, id := range t.PassToPass {
			left[id] = true
		}
	}
	var pool []string
	for _, id := range passing {
		if !left[id] {
			pool = append(pool, id)
		}
	}
	return pool
}
