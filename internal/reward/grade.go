package reward

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cwm/internal/env"
	"cwm/internal/errkind"
	"cwm/internal/sandbox"
	"cwm/internal/task"
	"cwm/internal/testrun"
)

// ApplyMethod says how the candidate patch went into the tree.
type ApplyMethod string

const (
	// ApplyGit: git apply took the patch as it is.
	ApplyGit ApplyMethod = "git-apply"
	// ApplyFuzz: git apply refused it and patch --fuzz took it, context
	// lines that no longer match included (as SWE-bench and CWM do).
	ApplyFuzz ApplyMethod = "patch-fuzz"
	// ApplyFailed: neither took it; the task is not resolved.
	ApplyFailed ApplyMethod = "failed"
	// ApplyEmpty: there was no patch; the task is not resolved.
	ApplyEmpty ApplyMethod = "empty"
)

// Fuzz is the fuzz factor of the patch fallback: how many context lines
// at each end of a hunk may mismatch. CWM's evaluation tries 5 first.
const Fuzz = 5

// The sets of hidden tests, as SWE-bench names them.
const (
	FailToPass = "FAIL_TO_PASS"
	PassToPass = "PASS_TO_PASS"
)

// TestOutcome is one hidden test's outcome.
type TestOutcome struct {
	ID  string `json:"id"`
	Set string `json:"set"`
	// Outcome is pass, fail, error, skip, or missing (the run did not
	// report the test: it does not exist, or its module does not import).
	Outcome string  `json:"outcome"`
	Seconds float64 `json:"seconds"`
	Message string  `json:"message,omitempty"`
}

// Durations are where a grading's wall time went, in seconds.
type Durations struct {
	// Setup is starting the sandbox and applying the task's patches.
	Setup float64 `json:"setup"`
	Apply float64 `json:"apply"`
	Tests float64 `json:"tests"`
	Total float64 `json:"total"`
}

// Result is the verdict on one candidate patch. A patch that does not
// apply or fails a test is a Result with a Reason, not an error.
type Result struct {
	// Resolved is set when the patch applied and every FAIL_TO_PASS and
	// PASS_TO_PASS test passed (a skipped test did not pass).
	Resolved bool        `json:"resolved"`
	Apply    ApplyMethod `json:"apply"`
	// ApplyLog holds what git apply and patch said when the patch did not
	// apply cleanly (capped).
	ApplyLog string        `json:"apply_log,omitempty"`
	Tests    []TestOutcome `json:"tests"`
	// Reason says why the task is not resolved.
	Reason string `json:"reason,omitempty"`
	// TestNote is the test run's note (a limit hit, a missing report).
	TestNote string `json:"test_note,omitempty"`
	// Similarity compares the patch with the task's gold patch; nil when
	// the gold patch has nothing to compare with (SimilarityError says
	// why).
	Similarity      *Score    `json:"similarity"`
	SimilarityError string    `json:"similarity_error,omitempty"`
	Seconds         Durations `json:"seconds"`
}

// ErrTask is wrapped by errors that come from the task rather than the
// candidate: its bug or test patch does not apply, it lists no hidden
// tests. Such a task grades nothing; the error is of kind errkind.Input.
var ErrTask = errkind.New(errkind.Input, "task cannot be graded")

// applyLogLimit caps the tool output kept in Result.ApplyLog.
const applyLogLimit = 4 << 10

// candidatePath is where the candidate patch is written in the sandbox.
const candidatePath = "/tmp/cwm-candidate.diff"

// Grade grades patch for task t in a fresh sandbox of sbs on e (the task's
// environment): it applies t's bug patch and test patch (both must apply
// with git apply), then the candidate, with git apply or else
// patch --fuzz, and runs only the FAIL_TO_PASS and PASS_TO_PASS tests. The
// similarity to t's gold patch is computed whatever happens. A task
// imported from a published dataset is graded by its dataset's harness
// instead (Harness: base_commit, test files restored, its log parser); e
// is then the environment of its image. An empty patch
// is not resolved, and needs no sandbox to say so. The error is
// for failures of the machinery and for tasks that cannot be graded
// (wrapping ErrTask).
func Grade(ctx context.Context, sbs *env.Sandboxes, e *env.Env, t *task.Task, patch string) (Result, error) {
	start := time.Now()
	var r Result
	if s, err := Similarity(patch, t.Patch); err != nil {
		r.SimilarityError = err.Error()
	} else {
		r.Similarity = &s
	}
	if t.Imported != nil && t.Imported.Format == "harbor" {
		r, err := gradeHarbor(ctx, sbs, e, t, patch, r)
		r.Seconds.Total = time.Since(start).Seconds()
		return r, err
	}
	ids := hiddenTests(t)
	if len(ids) == 0 {
		return r, fmt.Errorf("grade %s: %w: no FAIL_TO_PASS or PASS_TO_PASS tests", t.InstanceID, ErrTask)
	}

	if strings.TrimSpace(patch) == "" {
		// Nothing to apply: the buggy tree fails FAIL_TO_PASS by the
		// task's construction, so no sandbox is needed to say so.
		r.Apply, r.Reason = ApplyEmpty, "empty patch"
		r.Seconds.Total = time.Since(start).Seconds()
		return r, nil
	}
	if t.Imported != nil {
		r, err := gradeImported(ctx, sbs, e, t, patch, r)
		r.Seconds.Total = time.Since(start).Seconds()
		return r, err
	}
	s, err := sbs.Open(ctx, e)
	if err != nil {
		return r, fmt.Errorf("grade %s: %w", t.InstanceID, err)
	}
	defer s.Close()
	for _, p := range []struct{ name, text string }{{"bug_patch", t.BugPatch}, {"test_patch", t.TestPatch}} {
		if p.text == "" {
			continue
		}
		res, err := s.Exec(ctx, sandbox.Cmd{Args: []string{"git", "apply", "--whitespace=nowarn", "-"}, Stdin: strings.NewReader(p.text)})
		if err != nil {
			return r, fmt.Errorf("grade %s: apply %s: %w", t.InstanceID, p.name, err)
		}
		if !res.Success() {
			return r, fmt.Errorf("grade %s: %w: its %s does not apply to environment %s: %s", t.InstanceID, ErrTask, p.name, e.ID, firstLines(res.Stderr, 3))
		}
	}
	r.Seconds.Setup = time.Since(start).Seconds()

	applyStart := time.Now()
	r.Apply, r.ApplyLog, err = applyCandidate(ctx, s, patch)
	if err != nil {
		return r, fmt.Errorf("grade %s: apply the candidate patch: %w", t.InstanceID, err)
	}
	r.Seconds.Apply = time.Since(applyStart).Seconds()
	if r.Apply == ApplyFailed {
		r.Reason = "the patch does not apply"
	} else {
		testStart := time.Now()
		rep, err := testrun.Run(ctx, s, e.TestCommand, testrun.Options{IDs: ids, PythonVersion: e.Python, OutputLimit: e.Limits.Output})
		if err != nil {
			return r, fmt.Errorf("grade %s: run the hidden tests: %w", t.InstanceID, err)
		}
		r.Seconds.Tests = time.Since(testStart).Seconds()
		r.TestNote = rep.Note
		r.Tests, r.Resolved, r.Reason = judge(t, rep.Tests)
	}
	r.Seconds.Total = time.Since(start).Seconds()
	return r, nil
}

// hiddenTests lists the FAIL_TO_PASS then the PASS_TO_PASS ids, once each.
func hiddenTests(t *task.Task) []string {
	var ids []string
	seen := map[string]bool{}
	for _, id := range append(append([]string{}, t.FailToPass...), t.PassToPass...) {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}

// applyCandidate applies a non-empty patch in the sandbox's workdir. patch
// runs a dry run first, so that a patch whose hunks only partly apply
// leaves the tree untouched rather than half patched; --forward keeps it
// from reversing a patch that looks reversed.
func applyCandidate(ctx context.Context, s *sandbox.Sandbox, patch string) (ApplyMethod, string, error) {
	if err := s.WriteFile(ctx, candidatePath, []byte(patch), 0o644); err != nil {
		return "", "", err
	}
	var log strings.Builder
	res, err := s.Exec(ctx, sandbox.Cmd{Args: []string{"git", "apply", "--verbose", "--whitespace=nowarn", candidatePath}})
	if err != nil {
		return "", "", err
	}
	if res.Success() {
		return ApplyGit, "", nil
	}
	fmt.Fprintf(&log, "git apply: %s\n%s", res.Describe(), res.Stderr)
	patchArgs := []string{"patch", "--batch", "--forward", fmt.Sprintf("--fuzz=%d", Fuzz), "-p1", "--no-backup-if-mismatch", "-i", candidatePath}
	res, err = s.Exec(ctx, sandbox.Cmd{Args: append(patchArgs, "--dry-run")})
	if err != nil {
		return "", "", err
	}
	if res.Success() {
		res, err = s.Exec(ctx, sandbox.Cmd{Args: patchArgs})
		if err != nil {
			return "", "", err
		}
		if res.Success() {
			return ApplyFuzz, capText(log.String()), nil
		}
	}
	fmt.Fprintf(&log, "patch --fuzz=%d: %s\n%s%s", Fuzz, res.Describe(), res.Stdout, res.Stderr)
	return ApplyFailed, capText(log.String()), nil
}

// judge pairs the run's outcomes with the hidden tests and decides.
func judge(t *task.Task, ran []testrun.Test) (tests []TestOutcome, resolved bool, reason string) {
	byID := make(map[string]testrun.Test, len(ran))
	for _, x := range ran {
		byID[x.ID] = x
	}
	bad := map[string][]string{}
	add := func(set string, ids []string) {
		for _, id := range ids {
			o := TestOutcome{ID: id, Set: set, Outcome: "missing"}
			if x, ok := byID[id]; ok {
				o.Outcome, o.Seconds, o.Message = string(x.Outcome), x.Time.Seconds(), x.Message
			}
			if o.Outcome != string(testrun.Pass) {
				bad[set] = append(bad[set], id+" "+o.Outcome)
			}
			tests = append(tests, o)
		}
	}
	add(FailToPass, t.FailToPass)
	add(PassToPass, t.PassToPass)
	var why []string
	for _, set := range []string{FailToPass, PassToPass} {
		if b := bad[set]; len(b) > 0 {
			n := len(t.FailToPass)
			if set == PassToPass {
				n = len(t.PassToPass)
			}
			why = append(why, fmt.Sprintf("%s: %d of %d not passing (%s)", set, len(b), n, strings.Join(b[:min(len(b), 3)], ", ")))
		}
	}
	return tests, len(why) == 0, strings.Join(why, "; ")
}

func capText(s string) string {
	if len(s) <= applyLogLimit {
		return s
	}
	return s[:applyLogLimit] + "\n[... cut]"
}

// firstLines returns up to n lines of b, for error messages.
func firstLines(b []byte, n int) string {
	lines := strings.SplitN(strings.TrimSpace(string(b)), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], " / ")
}
