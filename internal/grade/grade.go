// Package grade grades model patches on cwm tasks the way SWE-bench's
// harness does (swebench 5.0.2's run_evaluation and get_eval_report):
// each patch applied to the task's buggy tree in a sandbox of its
// environment with the harness's chain of git apply commands, the task's
// task's test_patch applied after it as SWE-bench's eval script applies
// it, the tests run as cwm's validation runs them (so every test id
// counts, parametrised ids with spaces included), and SWE-bench's report
// written: resolved
// ids and each instance's tests_status.
package grade

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"cwm/internal/env"
	"cwm/internal/reward"
	"cwm/internal/task"
	"cwm/internal/testrun"
)

// Prediction is one row of a predictions file, as SWE-bench reads it.
// ModelPatch is a pointer so that null (patch_is_None) is told from "".
type Prediction struct {
	InstanceID      string  `json:"instance_id"`
	ModelNameOrPath string  `json:"model_name_or_path"`
	ModelPatch      *string `json:"model_patch"`
}

// Status lists the tests of one list that succeeded and failed.
type Status struct {
	Success []string `json:"success"`
	Failure []string `json:"failure"`
}

// Instance is SWE-bench's per-instance report (report.json of
// run_evaluation), with the reason when the patch could not be graded.
type Instance struct {
	PatchIsNone              bool              `json:"patch_is_None"`
	PatchExists              bool              `json:"patch_exists"`
	PatchSuccessfullyApplied bool              `json:"patch_successfully_applied"`
	Resolved                 bool              `json:"resolved"`
	TestsStatus              map[string]Status `json:"tests_status,omitempty"`
	Error                    string            `json:"error,omitempty"`
	Seconds                  float64           `json:"seconds"`
}

// Report is SWE-bench's run report (make_run_report, schema_version 2)
// with each instance's report under "instances" and the predictions
// naming no task under "unknown_ids".
type Report struct {
	TotalInstances      int                 `json:"total_instances"`
	SubmittedInstances  int                 `json:"submitted_instances"`
	CompletedInstances  int                 `json:"completed_instances"`
	ResolvedInstances   int                 `json:"resolved_instances"`
	UnresolvedInstances int                 `json:"unresolved_instances"`
	EmptyPatchInstances int                 `json:"empty_patch_instances"`
	ErrorInstances      int                 `json:"error_instances"`
	CompletedIDs        []string            `json:"completed_ids"`
	IncompleteIDs       []string            `json:"incomplete_ids"`
	EmptyPatchIDs       []string            `json:"empty_patch_ids"`
	SubmittedIDs        []string            `json:"submitted_ids"`
	ResolvedIDs         []string            `json:"resolved_ids"`
	UnresolvedIDs       []string            `json:"unresolved_ids"`
	ErrorIDs            []string            `json:"error_ids"`
	UnknownIDs          []string            `json:"unknown_ids"`
	SchemaVersion       int                 `json:"schema_version"`
	Instances           map[string]Instance `json:"instances"`
}

// Options configure Grade.
type Options struct {
	Store *env.Store
}

// Grade grades preds on tasks. A prediction naming no task, an empty
// patch, a patch that does not apply or a task that cannot be graded is
// a result in the report, as SWE-bench records it; the error is for
// failures of cwm.
func Grade(ctx context.Context, sbs *env.Sandboxes, tasks []task.Task, preds []Prediction, o Options) (*Report, error) {
	rep := &Report{TotalInstances: len(tasks), SubmittedInstances: len(preds), SchemaVersion: 2,
		Instances: map[string]Instance{}}
	byID := map[string]*task.Task{}
	for i := range tasks {
		byID[tasks[i].InstanceID] = &tasks[i]
	}
	predicted := map[string]bool{}
	for _, p := range preds {
		rep.SubmittedIDs = append(rep.SubmittedIDs, p.InstanceID)
		t := byID[p.InstanceID]
		if t == nil {
			rep.UnknownIDs = append(rep.UnknownIDs, p.InstanceID)
			continue
		}
		predicted[p.InstanceID] = true
		if p.ModelPatch == nil || *p.ModelPatch == "" {
			rep.EmptyPatchIDs = append(rep.EmptyPatchIDs, p.InstanceID)
			rep.Instances[p.InstanceID] = Instance{PatchIsNone: p.ModelPatch == nil}
			continue
		}
		start := time.Now()
		in, err := gradeOne(ctx, sbs, o.Store, t, *p.ModelPatch)
		if err != nil {
			return nil, fmt.Errorf("grade %s: %w", p.InstanceID, err)
		}
		in.Seconds = float64(time.Since(start).Milliseconds()) / 1000
		rep.Instances[p.InstanceID] = in
		switch {
		case in.Error != "":
			rep.ErrorIDs = append(rep.ErrorIDs, p.InstanceID)
		case in.Resolved:
			rep.CompletedIDs = append(rep.CompletedIDs, p.InstanceID)
			rep.ResolvedIDs = append(rep.ResolvedIDs, p.InstanceID)
		default:
			rep.CompletedIDs = append(rep.CompletedIDs, p.InstanceID)
			rep.UnresolvedIDs = append(rep.UnresolvedIDs, p.InstanceID)
		}
	}
	for _, t := range tasks {
		if !predicted[t.InstanceID] {
			rep.IncompleteIDs = append(rep.IncompleteIDs, t.InstanceID)
		}
	}
	for _, l := range []*[]string{&rep.CompletedIDs, &rep.IncompleteIDs, &rep.EmptyPatchIDs, &rep.SubmittedIDs,
		&rep.ResolvedIDs, &rep.UnresolvedIDs, &rep.ErrorIDs, &rep.UnknownIDs} {
		if *l == nil {
			*l = []string{}
		}
		sort.Strings(*l)
	}
	rep.CompletedInstances, rep.ResolvedInstances = len(rep.CompletedIDs), len(rep.ResolvedIDs)
	rep.UnresolvedInstances, rep.EmptyPatchInstances = len(rep.UnresolvedIDs), len(rep.EmptyPatchIDs)
	rep.ErrorInstances = len(rep.ErrorIDs)
	return rep, nil
}

// statusOf maps the outcome reward.Grade gives a test to the status
// SWE-bench's parsers report ("missing": not in the log at all).
var statusOf = map[string]string{string(testrun.Pass): "PASSED", string(testrun.Fail): "FAILED",
	string(testrun.Error): "ERROR", string(testrun.Skip): "SKIPPED"}

// gradeOne grades patch on t with reward.Grade (a fresh sandbox: the
// task's bug and test patches, the candidate by git apply or patch
// --fuzz, the FAIL_TO_PASS and PASS_TO_PASS tests) and judges its
// outcomes as SWE-bench's get_eval_report does.
func gradeOne(ctx context.Context, sbs *env.Sandboxes, st *env.Store, t *task.Task, patch string) (Instance, error) {
	in := Instance{PatchExists: true}
	e := st.Get(t.EnvID)
	if e == nil {
		in.Error = fmt.Sprintf("environment %s is not in the store", t.EnvID)
		return in, nil
	}
	r, err := reward.Grade(ctx, sbs, e, t, patch)
	if errors.Is(err, reward.ErrTask) {
		in.Error = err.Error()
		return in, nil
	}
	if err != nil {
		return in, err
	}
	if r.Apply == reward.ApplyFailed {
		in.Error = ">>>>> Patch Apply Failed: " + lastLine([]byte(r.ApplyLog))
		return in, nil
	}
	if r.TestNote != "" && len(r.Tests) == 0 {
		in.Error = "no test outcomes: " + r.TestNote
		return in, nil
	}
	statuses := map[string]string{}
	for _, o := range r.Tests {
		if s, ok := statusOf[o.Outcome]; ok {
			statuses[o.ID] = s
		}
	}
	in.PatchSuccessfullyApplied = true
	in.TestsStatus = map[string]Status{
		"FAIL_TO_PASS": judge(t.FailToPass, statuses, false),
		"PASS_TO_PASS": judge(t.PassToPass, statuses, true),
		"FAIL_TO_FAIL": {Success: []string{}, Failure: []string{}},
		"PASS_TO_FAIL": {Success: []string{}, Failure: []string{}},
	}
	f2p, p2p := in.TestsStatus["FAIL_TO_PASS"], in.TestsStatus["PASS_TO_PASS"]
	in.Resolved = len(f2p.Failure) == 0 && len(p2p.Failure) == 0
	return in, nil
}

// judge is get_eval_tests_report's check for one list (PASS_AND_FAIL):
// PASSED or XFAIL succeeds; for PASS_TO_PASS a SKIPPED test is no
// regression either; a test missing from the log fails.
func judge(ids []string, statuses map[string]string, maintained bool) Status {
	s := Status{Success: []string{}, Failure: []string{}}
	for _, id := range ids {
		switch st, ok := statuses[id]; {
		case st == "PASSED" || st == "XFAIL" || (maintained && st == "SKIPPED"):
			s.Success = append(s.Success, id)
		case !ok || st == "FAILED" || st == "ERROR" || st == "SKIPPED":
			s.Failure = append(s.Failure, id)
		}
	}
	return s
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
