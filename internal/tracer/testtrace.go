package tracer

import (
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"cwm/internal/batch"
	"cwm/internal/env"
	"cwm/internal/jsonl"
	"cwm/internal/sandbox"
	"cwm/internal/shard"
	"cwm/internal/task"
)

// Pre/post-fix test traces (cwm trace tests): a task's FAIL_TO_PASS tests
// traced on its buggy tree and on its fixed one, its PASS_TO_PASS tests
// once, on the fixed one; each test's own function is the trace's entry,
// the repository's code it calls inlined (SWE-rebench V2's test traces,
// in CWM's grammar and as plain text).

// TestTrace is one output line of trace tests: a test of a task on one
// tree, as a CWM trace (the fields of an Episode) and as plain text.
type TestTrace struct {
	// ID is "INSTANCE_ID/PHASE/TEST_ID".
	ID         string `json:"id"`
	InstanceID string `json:"instance_id"`
	TestID     string `json:"test_id"`
	// Affected is true for a FAIL_TO_PASS test, traced in both phases.
	Affected bool `json:"affected"`
	// Phase is "pre" (the buggy tree: the bug and test patches) or "post"
	// (the gold patch applied too).
	Phase string `json:"phase"`
	// Outcome is the test's outcome while traced (passed, failed, ...).
	Outcome string `json:"outcome"`
	// Function is the test function, the trace's entry.
	Function Code    `json:"function"`
	Status   Status  `json:"status"`
	Context  string  `json:"context"`
	Codes    []Code  `json:"codes"`
	Frames   []Frame `json:"frames"`
	Text     string  `json:"text"`
	// Plain is the trace as plain text, a line per event (PlainText).
	Plain  string       `json:"plain"`
	Output string       `json:"output"`
	Error  string       `json:"error"`
	Stats  EpisodeStats `json:"stats"`
	// TaskLines is how many lines the task gives, for resuming.
	TaskLines int `json:"task_lines"`
}

// TestsStage is cwm trace tests as a batch stage: a task's lines are
// keyed by their id and come from the task, which decides their shard.
var TestsStage = batch.Stage{Name: "trace tests", LineKey: jsonl.Field("id"), ItemKey: jsonl.Field("instance_id")}

// The phases of a task's test traces.
const (
	PhasePre  = "pre"
	PhasePost = "post"
)

// testPhase is one tree of a task and the tests traced on it.
type testPhase struct {
	name    string
	patches []namedPatch
	ids     []string
}

type namedPatch struct{ name, patch string }

// taskPhases are the trees of t: the buggy one (the bug patch, then the
// test patch) with the FAIL_TO_PASS tests, and the fixed one (the gold
// patch too) with FAIL_TO_PASS and PASS_TO_PASS.
func taskPhases(t *task.Task) []testPhase {
	buggy := []namedPatch{{"bug_patch", t.BugPatch}, {"test_patch", t.TestPatch}}
	f2p := uniq(t.FailToPass, nil)
	post := append(append([]string{}, f2p...), uniq(t.PassToPass, f2p)...)
	return []testPhase{
		{name: PhasePre, patches: buggy, ids: f2p},
		{name: PhasePost, patches: append(buggy, namedPatch{"patch", t.Patch}), ids: post},
	}
}

// uniq is ids in order, each once, without those in skip.
func uniq(ids, skip []string) []string {
	seen := map[string]bool{}
	for _, id := range skip {
		seen[id] = true
	}
	var out []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// taskLines is how many lines a task gives.
func taskLines(t *task.Task) int {
	n := 0
	for _, ph := range taskPhases(t) {
		n += len(ph.ids)
	}
	return n
}

// TestsOptions configure TraceTaskTests.
type TestsOptions struct {
	Tasks []task.Task
	// Store holds the tasks' environments (task.EnvID).
	Store *env.Store
	// Out is the output (JSONL, appended, resumed); In the tasks file,
	// which the shard's marker records.
	Out, In string
	// Repo configures the recording of a phase's tests (its Workers are
	// not used: a phase's tests run in one sandbox, batch after batch).
	Repo RepoOptions
	// Caps bound one test's trace (TraceCaps).
	Caps Caps
	// Workers is how many tasks run at a time.
	Workers int
	// Max stops the run once the output holds Max lines (0: no limit).
	Max      int
	Shard    shard.Shard
	Progress io.Writer
}

// TestsSummary is what a trace tests run wrote.
type TestsSummary struct {
	// Statuses counts the lines written by phase and status
	// ("pre ok", "post exception"); Outcomes by phase and the test's
	// outcome while traced.
	Statuses map[string]int `json:"statuses"`
	Outcomes map[string]int `json:"outcomes"`
	Lines    int            `json:"lines"`
	// Tasks counts the tasks whose lines were all written; Skipped those
	// an earlier run wrote.
	Tasks   int     `json:"tasks"`
	Skipped int     `json:"skipped"`
	Stopped bool    `json:"stopped_at_max"`
	Seconds float64 `json:"seconds"`
}

// testsWritten reads what an earlier run wrote: the ids of its lines, and
// the tasks all of whose lines are there.
func testsWritten(out string) (ids, done map[string]bool, err error) {
	ids, done = map[string]bool{}, map[string]bool{}
	count := map[string]int{}
	err = jsonl.Decode(out, func(_ int, l struct {
		ID         string `json:"id"`
		InstanceID string `json:"instance_id"`
		TaskLines  int    `json:"task_lines"`
	}) error {
		if !ids[l.ID] {
			ids[l.ID] = true
			if count[l.InstanceID]++; count[l.InstanceID] >= l.TaskLines {
				done[l.InstanceID] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("cannot resume: %w", err)
	}
	return ids, done, nil
}

// TraceTaskTests traces the tests of the tasks of the shard not yet all in
// Out, on batch.RunStage: a task is an item, its lines written together
// once both its phases are traced (a task an earlier run left half
// written gets its missing lines). A task whose environment is missing, or
// whose patches do not apply, is a line per test saying so (status error),
// not a failure of the run. A task whose environment has a Python other
// than the tracer's refuses the whole run before anything is traced.
func TraceTaskTests(ctx context.Context, sbs *env.Sandboxes, opts TestsOptions) (*TestsSummary, error) {
	if opts.Store != nil {
		for _, t := range opts.Tasks {
			if err := CheckPython(opts.Store.Get(t.EnvID)); err != nil {
				return nil, fmt.Errorf("trace tests of %s: %w", t.InstanceID, err)
			}
		}
	}
	sum := &TestsSummary{Statuses: map[string]int{}, Outcomes: map[string]int{}}
	ids, done, err := testsWritten(opts.Out)
	if err != nil {
		return nil, err
	}
	key := func(t task.Task) string { return t.InstanceID }
	plan := batch.NewPlan(opts.Tasks, key, opts.Shard, done, batch.UnfinishedLast)
	sum.Skipped = plan.Resumed()
	written := len(ids)
	run, err := batch.RunStage(ctx, batch.Job[task.Task, []TestTrace]{Stage: &TestsStage, Plan: &plan,
		Key: key, Out: opts.Out, Shard: opts.Shard, Inputs: []string{opts.In}, Workers: max(opts.Workers, 1),
		Progress: opts.Progress, Label: "trace tests", QuietIdle: true, Unmarked: opts.Max > 0,
		Admit: func(t task.Task, _ int) batch.Admission {
			if opts.Max > 0 && written >= opts.Max {
				sum.Stopped = true
				return batch.Stop
			}
			written += taskLines(&t)
			return batch.Take
		},
		Do: func(ctx context.Context, _ int, t task.Task) ([]TestTrace, error) {
			return traceTask(ctx, sbs, &t, opts)
		},
		Write: func(w *jsonl.Writer, t task.Task, lines []TestTrace, err error) (string, error) {
			if err != nil {
				return "", fmt.Errorf("task %s: %w", t.InstanceID, err)
			}
			for i := range lines {
				l := &lines[i]
				if ids[l.ID] {
					continue
				}
				if err := w.Write(l); err != nil {
					return "", fmt.Errorf("write %s: %w", opts.Out, err)
				}
				sum.Lines++
				sum.Statuses[l.Phase+" "+string(l.Status)]++
				sum.Outcomes[l.Phase+" "+l.Outcome]++
			}
			sum.Tasks++
			return "traced", nil
		}})
	sum.Seconds = run.Seconds
	return sum, err
}

// traceTask traces the tests of t on its two trees.
func traceTask(ctx context.Context, sbs *env.Sandboxes, t *task.Task, opts TestsOptions) ([]TestTrace, error) {
	n := taskLines(t)
	var e *env.Env
	why := ""
	if opts.Store != nil {
		e = opts.Store.Get(t.EnvID)
	}
	if e == nil {
		why = fmt.Sprintf("environment %q of the task is not in the store (see cwm env ls)", t.EnvID)
	}
	var out []TestTrace
	for _, ph := range taskPhases(t) {
		var lines []TestTrace
		var err error
		if why == "" {
			lines, err = tracePhase(ctx, sbs, e, t, ph, opts)
			if err != nil {
				return nil, err
			}
		} else {
			for _, id := range ph.ids {
				lines = append(lines, TestTrace{Status: Error, Error: why, TestID: id})
			}
		}
		for i := range lines {
			l := &lines[i]
			l.InstanceID, l.Phase, l.TaskLines = t.InstanceID, ph.name, n
			l.Affected = slices.Contains(t.FailToPass, l.TestID)
			l.ID = t.InstanceID + "/" + ph.name + "/" + l.TestID
			if l.Codes == nil {
				l.Codes, l.Frames = []Code{}, []Frame{}
			}
		}
		out = append(out, lines...)
	}
	return out, nil
}

// tracePhase records ph's tests in one sandbox on e with ph's patches
// applied, and makes each test's trace: the episode whose root is the
// test function, everything it calls inlined. The sources of the traces
// are read from that sandbox, so they are the patched files.
func tracePhase(ctx context.Context, sbs *env.Sandboxes, e *env.Env, t *task.Task, ph testPhase, opts TestsOptions) ([]TestTrace, error) {
	s, err := sbs.Open(ctx, e)
	if err != nil {
		return nil, fmt.Errorf("trace tests of %s: %w", t.InstanceID, err)
	}
	defer s.Close()
	var lines []TestTrace
	for _, p := range ph.patches {
		if why, err := applyTaskPatch(ctx, s, p); err != nil {
			return nil, err
		} else if why != "" {
			for _, id := range ph.ids {
				lines = append(lines, TestTrace{TestID: id, Status: Error, Error: why})
			}
			return lines, nil
		}
	}
	ropts := opts.Repo.withDefaults()
	ropts.Tests = true
	if ropts.PythonVersion == "" {
		ropts.PythonVersion = e.Python
	}
	eopts := EpisodeOptions{MaxDepth: 1 << 20, StepIn: 1, Caps: opts.Caps, Root: ropts.Root,
		Source: func(rel string) ([]byte, error) {
			return s.ReadFile(ctx, path.Join(ropts.Root, rel), int64(maxSourceBytes))
		}}
	for _, ids := range testBatches(e, ph.ids, ropts) {
		raws, err := runBatchIn(ctx, s, e, ids, ropts)
		if err != nil {
			return nil, err
		}
		for _, r := range raws {
			lines = append(lines, testTrace(r, eopts))
		}
	}
	return lines, nil
}

// applyTaskPatch applies a patch of a task in s; why says why it does not
// apply (a result about the task), err is a failure of the sandbox.
func applyTaskPatch(ctx context.Context, s *sandbox.Sandbox, p namedPatch) (why string, err error) {
	if p.patch == "" {
		return "", nil
	}
	res, err := s.Exec(ctx, sandbox.Cmd{Args: []string{"git", "apply", "--whitespace=nowarn", "-"},
		Stdin: strings.NewReader(p.patch), Dir: env.RepoRoot})
	if err != nil {
		return "", fmt.Errorf("apply the task's %s: %w", p.name, err)
	}
	if !res.Success() {
		return fmt.Sprintf("the task's %s does not apply: %s", p.name, strings.TrimSpace(string(res.Stderr))), nil
	}
	return "", nil
}

// testTrace makes a test's line from its recording: the episode rooted at
// the test function (a pytest id FILE::[CLASS::]NAME[PARAMS] names it).
func testTrace(r *RawTest, eopts EpisodeOptions) TestTrace {
	l := TestTrace{TestID: r.Test, Outcome: string(r.Outcome)}
	file, qual := testFunction(r.Test)
	if r.Status == Error && len(r.frames) == 0 {
		l.Status, l.Error = Error, r.Error
		return l
	}
	for _, ep := range Cut(r, eopts) {
		if ep.Function.File != file || ep.Function.Qualname != qual {
			continue
		}
		l.Function, l.Status, l.Context, l.Codes, l.Frames = ep.Function, ep.Status, ep.Context, ep.Codes, ep.Frames
		l.Text, l.Output, l.Error, l.Stats = ep.Text, ep.Output, ep.Error, ep.Stats
		if ep.Status.Complete() {
			l.Plain = PlainText(ep.Context, ep.Codes, ep.Frames)
		} else {
			l.Frames = []Frame{} // dropped, as trace prog drops them
		}
		return l
	}
	l.Status = Error
	l.Error = fmt.Sprintf("the recording has no call of the test function %s in %s", qual, file)
	if r.Error != "" {
		l.Error += ": " + r.Error
	}
	return l
}

// testFunction is the file and qualified name of a pytest id's function:
// "tests/test_a.py::TestX::test_y[1-2]" gives tests/test_a.py and
// TestX.test_y.
func testFunction(id string) (file, qualname string) {
	file, rest, _ := strings.Cut(id, "::")
	if i := strings.IndexByte(rest, '['); i >= 0 {
		rest = rest[:i]
	}
	return file, strings.ReplaceAll(rest, "::", ".")
}

// Write prints the summary for people.
func (s *TestsSummary) Write(w io.Writer) {
	fmt.Fprintf(w, "traced %d tests of %d tasks in %.1fs: %s\n", s.Lines, s.Tasks, s.Seconds, batch.FormatCounts(s.Statuses))
	fmt.Fprintf(w, "outcomes while traced: %s\n", batch.FormatCounts(s.Outcomes))
	if s.Skipped > 0 {
		fmt.Fprintf(w, "skipped %d tasks already in the output\n", s.Skipped)
	}
	if s.Stopped {
		fmt.Fprintln(w, "stopped at --max")
	}
}
