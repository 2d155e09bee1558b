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
	"fmt"
	"sort"
	"strings"
	"time"

	"cwm/internal/env"
	"cwm/internal/sandbox"
	"cwm/internal/task"
	"cwm/internal/taskexport"
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
	boxes := map[string]*sandbox.Sandbox{}
	defer func() {
		for _, sb := range boxes {
			sb.Close()
		}
	}()
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
		in, err := gradeOne(ctx, sbs, boxes, o.Store, t, *p.ModelPatch)
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

// applyChain is SWE-bench's: each git apply in turn on a clean tree
// (HEAD is the buggy tree, committed), then a check that the patch is
// not already applied.
const applyChain = `for cmd in "git apply --verbose" "git apply --verbose --3way" "git apply --verbose --reject"; do
  git checkout -q -- . ; git clean -qfd
  $cmd /tmp/cwm-model.patch && exit 0
done
git apply --check --reverse /tmp/cwm-model.patch && exit 0
exit 3`

// buggyCommit commits the task's buggy tree, so the apply chain's resets
// go back to it, as they go back to base_commit in SWE-bench's images.
const buggyCommit = `set -e
[ -s /tmp/cwm-bug.patch ] && git apply /tmp/cwm-bug.patch
git add -A
git -c user.name=cwm -c user.email=cwm@localhost commit -q --allow-empty -m buggy`

// testPatch restores the files test_patch touches and applies it, after
// the model's patch, as SWE-bench's eval script does.
const testPatch = `set -e
[ -s /tmp/cwm-test.patch ] || exit 0
git checkout HEAD -- "$@" 2>/dev/null || true
git apply /tmp/cwm-test.patch`

// statusOf maps a cwm test outcome to the status SWE-bench's parsers
// report.
var statusOf = map[testrun.Outcome]string{testrun.Pass: "PASSED", testrun.Fail: "FAILED",
	testrun.Error: "ERROR", testrun.Skip: "SKIPPED"}

func gradeOne(ctx context.Context, sbs *env.Sandboxes, boxes map[string]*sandbox.Sandbox, st *env.Store, t *task.Task, patch string) (Instance, error) {
	in := Instance{PatchExists: true}
	e := st.Get(t.EnvID)
	if e == nil {
		in.Error = fmt.Sprintf("environment %s is not in the store", t.EnvID)
		return in, nil
	}
	sb := boxes[e.ID]
	if sb == nil {
		var err error
		if sb, err = sbs.Open(ctx, e); err != nil {
			return in, err
		}
		boxes[e.ID] = sb
	}
	if err := sb.Reset(ctx); err != nil {
		return in, fmt.Errorf("reset sandbox: %w", err)
	}
	for name, text := range map[string]string{"/tmp/cwm-bug.patch": t.BugPatch, "/tmp/cwm-model.patch": patch, "/tmp/cwm-test.patch": t.TestPatch} {
		if err := sb.WriteFile(ctx, name, []byte(text), 0o644); err != nil {
			return in, fmt.Errorf("write %s: %w", name, err)
		}
	}
	run := func(shell string, args ...string) (sandbox.Result, error) {
		return sb.Exec(ctx, sandbox.Cmd{Args: append([]string{"bash", "-c", shell, "grade"}, args...), Dir: env.RepoRoot, Timeout: 5 * time.Minute})
	}
	res, err := run(buggyCommit)
	if err != nil {
		return in, err
	}
	if !res.Success() {
		return in, fmt.Errorf("make the buggy tree: %s: %s", res.Describe(), lastLine(res.Stderr))
	}
	if res, err = run(applyChain); err != nil {
		return in, err
	}
	if !res.Success() {
		in.Error = ">>>>> Patch Apply Failed: " + lastLine(res.Stderr)
		return in, nil
	}
	if res, err = run(testPatch, taskexport.PatchedFiles(t.TestPatch)...); err != nil {
		return in, err
	}
	if !res.Success() {
		in.Error = "test_patch does not apply after the patch: " + lastLine(res.Stderr)
		return in, nil
	}
	ids := append(append([]string{}, t.FailToPass...), t.PassToPass...)
	rep, err := testrun.Run(ctx, sb, e.TestCommand, testrun.Options{IDs: ids, Timeout: e.Limits.Timeout,
		PythonVersion: e.Python, OutputLimit: e.Limits.Output})
	if err != nil {
		return in, fmt.Errorf("run tests: %w", err)
	}
	if rep.Result.Reason != sandbox.ReasonNone {
		in.Error = "the tests were stopped by the " + string(rep.Result.Reason) + " limit"
		return in, nil
	}
	statuses := map[string]string{}
	for _, r := range rep.Tests {
		statuses[r.ID] = statusOf[r.Outcome]
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
