package taskimport

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"cwm/internal/logparse"
	"cwm/internal/reward"
	"cwm/internal/task"
)

// Reasons a task is kept out, the classes of the validation report.
const (
	ReasonBadRow       = "bad row"
	ReasonDuplicate    = "duplicate instance_id"
	ReasonImageMissing = "image missing"
	ReasonPatch        = "patch does not apply"
	ReasonGoldFails    = "gold fails"
	ReasonNoopPasses   = "no-op passes"
	ReasonFlaky        = "flaky"
	ReasonNoTests      = "parser found no tests"
)

// validate runs t with the gold patch and with the empty patch, runs times
// each, and returns the class and the reason it is kept out ("" when it
// holds). It fills in what the image says (base_commit, the gold fix of a
// dataset whose patch makes the bug, R2E-Gym's FAIL_TO_PASS and
// PASS_TO_PASS) and t.Validation.
func (s Sandboxes) validate(ctx context.Context, t *task.Task, runs int) (class, reason string, err error) {
	t0 := time.Now()
	v := &task.Validation{}
	if why, err := s.inspect(ctx, t); err != nil || why != "" {
		return ReasonPatch, why, err
	}
	var gold, empty []*reward.HarnessRun
	for i := 0; i < runs; i++ {
		r, err := s.grade(ctx, t, t.Patch)
		if err != nil {
			return "", "", err
		}
		if r.Problem != "" {
			return ReasonPatch, fmt.Sprintf("gold, run %d: %s", i+1, r.Problem), nil
		}
		if len(r.Status) == 0 {
			return ReasonNoTests, fmt.Sprintf("gold, run %d: %s found no test in the output (%s)", i+1, t.Imported.LogParser, tail(r.Log)), nil
		}
		gold = append(gold, r)
	}
	if exp := t.Imported.Expected; exp != nil {
		if c, why := expectedHolds(exp, gold); c != "" {
			return c, why, nil
		}
	}
	for i := 0; i < runs; i++ {
		r, err := s.grade(ctx, t, "")
		if err != nil {
			return "", "", err
		}
		if r.Problem != "" {
			return ReasonPatch, fmt.Sprintf("empty patch, run %d: %s", i+1, r.Problem), nil
		}
		empty = append(empty, r)
	}
	if exp := t.Imported.Expected; exp != nil {
		t.FailToPass, t.PassToPass = splitExpected(exp, empty[0])
	}
	if len(t.FailToPass) == 0 {
		return ReasonNoopPasses, "no test fails without the fix", nil
	}
	want := append(append([]string{}, t.FailToPass...), t.PassToPass...)
	if c, why := allPass(want, gold); c != "" {
		return c, why, nil
	}
	v.Checks = append(v.Checks, fmt.Sprintf("gold patch passes all %d FAIL_TO_PASS and PASS_TO_PASS tests (%d runs)", len(want), runs))
	for _, id := range t.FailToPass {
		passed := 0
		for _, r := range empty {
			if passes(r.Status[id]) {
				passed++
			}
		}
		switch {
		case passed == runs:
			return ReasonNoopPasses, fmt.Sprintf("FAIL_TO_PASS test %s passes without the fix", id), nil
		case passed > 0:
			return ReasonFlaky, fmt.Sprintf("FAIL_TO_PASS test %s passes without the fix in %d of %d runs", id, passed, runs), nil
		}
	}
	v.Checks = append(v.Checks, fmt.Sprintf("empty patch fails all %d FAIL_TO_PASS tests (%d runs)", len(t.FailToPass), runs))
	for _, r := range append(gold, empty...) {
		v.TestsRun += len(r.Status)
	}
	v.Seconds = time.Since(t0).Seconds()
	t.Validation = v
	return "", "", nil
}

// passes is SWE-bench's test_passed: PASSED or XFAIL.
func passes(status string) bool { return status == logparse.Passed || status == logparse.XFail }

// allPass checks that every test of want passes in every run: a test that
// fails in every run is a gold failure, one that fails in some a flaky
// test.
func allPass(want []string, runs []*reward.HarnessRun) (class, reason string) {
	for _, id := range want {
		failed, last := 0, ""
		for _, r := range runs {
			if st := r.Status[id]; !passes(st) {
				failed++
				if last = st; st == "" {
					last = "not run"
				}
			}
		}
		switch {
		case failed == len(runs):
			return ReasonGoldFails, fmt.Sprintf("test %s does not pass with the gold patch (%s)", id, last)
		case failed > 0:
			return ReasonFlaky, fmt.Sprintf("test %s fails with the gold patch in %d of %d runs (%s)", id, failed, len(runs), last)
		}
	}
	return "", ""
}

// expectedHolds checks the gold runs against R2E-Gym's
// expected_output_json: each test's status as expected, in every run.
func expectedHolds(exp map[string]string, runs []*reward.HarnessRun) (class, reason string) {
	for _, id := range sortedKeys(exp) {
		bad := 0
		got := ""
		for _, r := range runs {
			if st := r.Status[id]; st != exp[id] {
				bad++
				if got = st; st == "" {
					got = "not run"
				}
			}
		}
		switch {
		case bad == len(runs):
			return ReasonGoldFails, fmt.Sprintf("test %s is %s with the gold patch, expected %s", id, got, exp[id])
		case bad > 0:
			return ReasonFlaky, fmt.Sprintf("test %s is %s with the gold patch in %d of %d runs, expected %s", id, got, bad, len(runs), exp[id])
		}
	}
	return "", ""
}

// splitExpected derives R2E-Gym's FAIL_TO_PASS (expected to pass, failing
// without the fix) and PASS_TO_PASS (expected to pass, passing without
// it) from a run with the empty patch.
func splitExpected(exp map[string]string, empty *reward.HarnessRun) (f2p, p2p []string) {
	for _, id := range sortedKeys(exp) {
		if !passes(exp[id]) {
			continue
		}
		if passes(empty.Status[id]) {
			p2p = append(p2p, id)
		} else {
			f2p = append(f2p, id)
		}
	}
	return f2p, p2p
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// tail is the end of a log, for a reason.
func tail(log string) string {
	log = strings.TrimSpace(log)
	if len(log) > 200 {
		log = "..." + log[len(log)-200:]
	}
	return strings.ReplaceAll(log, "\n", " | ")
}
