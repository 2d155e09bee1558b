// Package task is cwm's bug-fix task instance: the SWE-bench instance schema
// (instance_id, repo, base_commit, patch, test_patch, problem_statement,
// FAIL_TO_PASS, PASS_TO_PASS, ...) plus the fields cwm needs to rebuild the
// task's environment and to audit how the task was verified.
package task

import (
	"cwm/internal/errkind"
	"cwm/internal/jsonl"
)

// Task is one verified bug-fix task. The JSON field names of the SWE-bench
// part are SWE-bench's own, so the output loads wherever SWE-bench does.
type Task struct {
	InstanceID       string `json:"instance_id"`
	Repo             string `json:"repo"`
	BaseCommit       string `json:"base_commit"`
	Patch            string `json:"patch"`      // the gold fix; applies with git apply to the buggy tree
	TestPatch        string `json:"test_patch"` // test changes ("" for mutate-fix tasks)
	ProblemStatement string `json:"problem_statement"`
	// FailToPass are tests that fail on the buggy tree and pass with the
	// fix; PassToPass pass on both.
	FailToPass             []string `json:"FAIL_TO_PASS"`
	PassToPass             []string `json:"PASS_TO_PASS"`
	Version                string   `json:"version"`
	CreatedAt              string   `json:"created_at"`
	EnvironmentSetupCommit string   `json:"environment_setup_commit"`
	HintsText              string   `json:"hints_text,omitempty"`

	// EnvID is the cwm environment the task runs in.
	EnvID string `json:"env_id"`
	// BugPatch applies to the environment's revision and introduces the
	// bug (mutate-fix tasks); empty for tasks from real history, whose
	// buggy tree is the environment at BaseCommit.
	BugPatch string `json:"bug_patch,omitempty"`
	// Kind is "mutate" or "commit".
	Kind     string `json:"kind,omitempty"`
	Family   string `json:"family,omitempty"`
	Operator string `json:"operator,omitempty"`
	File     string `json:"file,omitempty"`
	Function string `json:"function,omitempty"`
	// Validation records how the task was verified.
	Validation *Validation `json:"validation,omitempty"`
	// StatementSource says who wrote ProblemStatement, for tasks from
	// history: "commit message" (the fix's own words, which may give the
	// fix away), "issue text" (given with the commit) or "model NAME"
	// (written by that model from the failing tests).
	StatementSource string `json:"statement_source,omitempty"`
	// FixClass is the fix classifier's verdict on a commit task.
	FixClass *FixClass `json:"fix_class,omitempty"`
	// Imported says how a task imported from a published dataset runs:
	// its image and how its own harness grades it (nil for cwm's tasks).
	Imported *Imported `json:"imported,omitempty"`
}

// FixClass is the fix classifier's verdict on a commit: whether it fixes
// a bug (rather than adding a feature, refactoring or documenting), with
// the score of its evidence and every reason that counted.
type FixClass struct {
	Fix   bool `json:"fix"`
	Score int  `json:"score"`
	// Issues are the issue numbers the commit message links ("#12").
	Issues  []string `json:"issues,omitempty"`
	Reasons []string `json:"reasons"`
	// Model names the model whose verdict Fix is, when one was asked and
	// answered; otherwise the rules' score decided.
	Model string `json:"model,omitempty"`
}

// Validation is the audit trail of a task's verification.
type Validation struct {
	// TestsRun counts test executions spent deciding the task.
	TestsRun int `json:"tests_run"`
	// Seconds is the wall time spent validating.
	Seconds float64 `json:"seconds"`
	// Checks lists the checks that passed, e.g. "bug fails FAIL_TO_PASS
	// (run 1)", "gold passes FAIL_TO_PASS and PASS_TO_PASS (run 2)".
	Checks []string `json:"checks"`
}

// Load reads a tasks file a command was given (JSONL). Every line must be
// a task: a malformed line, a field of the wrong type, a task without an
// instance_id, a duplicate id or a last line cut off is an error
// "path:line: why", of kind errkind.Input; a missing file is one of kind
// errkind.NotFound.
func Load(path string) ([]Task, error) {
	return load(path, jsonl.ScanInput)
}

// LoadAll reads the tasks files a run was given, in order, as Load does.
func LoadAll(paths []string) ([]Task, error) {
	var all []Task
	for _, p := range paths {
		ts, err := Load(p)
		if err != nil {
			return nil, err
		}
		all = append(all, ts...)
	}
	return all, nil
}

// Written reads the tasks an earlier run of a stage wrote to path, to
// resume it: a missing file holds none, and a torn last line (the run was
// killed while writing it) is left for jsonl.Append to cut off.
func Written(path string) ([]Task, error) {
	return load(path, jsonl.Scan)
}

func load(path string, scan func(string, func(int, []byte) error) error) ([]Task, error) {
	var tasks []Task
	seen := map[string]int{}
	err := scan(path, func(n int, line []byte) error {
		var t Task
		if err := jsonl.Unmarshal(line, &t); err != nil {
			return err
		}
		if t.InstanceID == "" {
			return errkind.New(errkind.Input, "task without instance_id")
		}
		if prev, ok := seen[t.InstanceID]; ok {
			return errkind.Errorf(errkind.Input, "instance_id %q already on line %d", t.InstanceID, prev)
		}
		seen[t.InstanceID] = n
		tasks = append(tasks, t)
		return nil
	})
	return tasks, err
}
