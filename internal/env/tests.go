package env

import (
	"context"
	"time"

	"cwm/internal/testrun"
)

// TestOutcome is one test's outcome in a run of an environment's tests,
// beside its baseline when the two differ.
type TestOutcome struct {
	ID       string  `json:"id"`
	Outcome  string  `json:"outcome"`
	Seconds  float64 `json:"seconds"`
	Baseline string  `json:"baseline,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// TestRun is a run of an environment's tests.
type TestRun struct {
	// Tests are the outcomes, those asked for that did not run last, as
	// "missing".
	Tests []TestOutcome
	// Bad counts the tests that failed, errored or are missing.
	Bad    int
	Report *testrun.Report
}

// RunTests runs e's test command (only the tests ids, when given) in a
// fresh sandbox of sbs, under timeout (0: e's), and pairs each outcome
// with the baseline's.
func RunTests(ctx context.Context, sbs *Sandboxes, e *Env, ids []string, timeout time.Duration) (*TestRun, error) {
	s, err := sbs.Open(ctx, e)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	rep, err := testrun.Run(ctx, s, e.TestCommand, testrun.Options{IDs: ids, Timeout: timeout,
		PythonVersion: e.Python, OutputLimit: e.Limits.Output})
	if err != nil {
		return nil, err
	}
	baseline := map[string]string{}
	for _, t := range e.Baseline {
		baseline[t.ID] = t.Status
	}
	run := &TestRun{Report: rep}
	seen := map[string]bool{}
	for _, t := range rep.Tests {
		seen[t.ID] = true
		o := TestOutcome{ID: t.ID, Outcome: string(t.Outcome), Seconds: t.Time.Seconds(), Message: t.Message}
		if b, ok := baseline[t.ID]; ok && b != o.Outcome {
			o.Baseline = b
		}
		if t.Outcome == testrun.Fail || t.Outcome == testrun.Error {
			run.Bad++
		}
		run.Tests = append(run.Tests, o)
	}
	for _, id := range ids {
		if !seen[id] {
			run.Tests = append(run.Tests, TestOutcome{ID: id, Outcome: "missing", Baseline: baseline[id]})
			run.Bad++
		}
	}
	return run, nil
}
