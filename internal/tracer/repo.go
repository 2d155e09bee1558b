package tracer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime"
	"time"

	"cwm/internal/batch"
	"cwm/internal/env"
	"cwm/internal/sandbox"
	"cwm/internal/testrun"
)

// Repository tracing runs a repository's tests under the tracer, each test
// recorded separately (repotrace.py), in sandboxes on its environment, and
// cuts the recordings into function-level episodes (episodes.go).

// RepoOptions configure TraceTests. Zero fields take the defaults in
// parentheses.
type RepoOptions struct {
	// Workers is the number of test runs at a time, each in its own sandbox
	// (runtime.NumCPU()).
	Workers int
	// Batch is how many tests one run (one pytest process) traces (32).
	// Batches are consecutive slices of the tests in the order given, so a
	// test's recording does not depend on Workers; a test can observe what
	// the tests before it in its batch left behind, as in any suite run.
	Batch int
	// Timeout is how long one test is recorded; past it the test runs on
	// untraced (60s).
	Timeout time.Duration
	// Caps bound the recording of one test (TestCaps; MaxBytes is a lower
	// bound of its text). Episodes have their own, smaller caps
	// (EpisodeOptions).
	Caps
	// Root is the repository inside the sandbox (/repo).
	Root string
	// PythonVersion is the Python of the tests ("3.11"), for unittest
	// (default: the environment's).
	PythonVersion string
	// Log receives a line per batch; nil discards them.
	Log *slog.Logger
	// Started, when set, is called with a batch's tests as their run
	// begins (on the worker's goroutine), for progress.
	Started func(ids []string)
	// Tests records the tests' own code too (test files, conftest.py), so
	// that a test function can be the root of a trace (trace tests).
	Tests bool
}

func (o RepoOptions) withDefaults() RepoOptions {
	if o.Workers <= 0 {
		o.Workers = runtime.NumCPU()
	}
	if o.Batch <= 0 {
		o.Batch = 32
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	o.Caps = o.Caps.or(TestCaps)
	if o.Root == "" {
		o.Root = "/repo"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// RawTest is the recording of one test.
type RawTest struct {
	Test string
	// Status is OK when the whole test was recorded, TooLong or Timeout
	// when recording stopped at a cap, Error when it could not be recorded
	// (Error says why).
	Status Status
	Error  string
	// Outcome is how the test ended under tracing, "" when unknown.
	Outcome testrun.Outcome
	// Codes are the code objects of the frames, with absolute file names.
	Codes   []Code
	Seconds float64
	frames  []wireFrame
}

// TraceTests records the tests ids of environment e, in sandboxes of sbs
// on it, and calls emit with each recording, in the order of ids. A test
// that could not be recorded (its run crashed or timed out) is a RawTest
// with status Error, not an error; TraceTests fails only when sandboxes
// cannot be run, ctx ends or emit fails.
func TraceTests(ctx context.Context, sbs *env.Sandboxes, e *env.Env, ids []string, opts RepoOptions, emit func(*RawTest) error) error {
	opts = opts.withDefaults()
	if err := CheckPython(e); err != nil {
		return err
	}
	if opts.PythonVersion == "" {
		opts.PythonVersion = e.Python
	}
	// Emitted in the order of the batches, whichever finishes first.
	return batch.Run(ctx, testBatches(e, ids, opts), batch.Options[[]string]{Workers: opts.Workers, InOrder: true},
		func(ctx context.Context, _ int, ids []string) ([]*RawTest, error) {
			if opts.Started != nil {
				opts.Started(ids)
			}
			return runBatch(ctx, sbs, e, ids, opts)
		},
		func(_ []string, tests []*RawTest, err error) error {
			if err != nil {
				return err
			}
			for _, t := range tests {
				if err := emit(t); err != nil {
					return err
				}
			}
			return nil
		})
}

// testBatches cuts ids into the batches that each run in a sandbox of
// their own (opts with its defaults).
func testBatches(e *env.Env, ids []string, opts RepoOptions) [][]string {
	if e.TestCommand.Framework == testrun.Shell {
		// cwm cannot choose tests of a command it does not understand: the
		// whole command runs once, and the tests asked for are kept.
		return [][]string{ids}
	}
	var batches [][]string
	for i := 0; i < len(ids); i += opts.Batch {
		batches = append(batches, ids[i:min(i+opts.Batch, len(ids))])
	}
	return batches
}

const repoOut = "/tmp/cwmtrace/out.jsonl"

// runBatch records one batch of tests in a fresh sandbox.
func runBatch(ctx context.Context, sbs *env.Sandboxes, e *env.Env, ids []string, opts RepoOptions) ([]*RawTest, error) {
	s, err := sbs.Open(ctx, e)
	if err != nil {
		return nil, fmt.Errorf("trace tests: %w", err)
	}
	defer s.Close()
	return runBatchIn(ctx, s, e, ids, opts)
}

// runBatchIn records one batch of tests in s, a sandbox on e (a task's
// tree, for trace tests).
func runBatchIn(ctx context.Context, s *sandbox.Sandbox, e *env.Env, ids []string, opts RepoOptions) ([]*RawTest, error) {
	start := time.Now()
	cmd := e.TestCommand
	if err := installPy(ctx, s); err != nil {
		return nil, err
	}
	if r, err := s.Exec(ctx, sandbox.Cmd{Args: []string{"mkdir", "-p", "/tmp/cwmtrace"}}); err != nil || !r.Success() {
		return nil, fmt.Errorf("prepare the trace output directory: %v %s", err, r.Describe())
	}
	conf, _ := json.Marshal(map[string]any{"root": opts.Root, "max_events": opts.MaxEvents,
		"max_bytes": opts.MaxBytes, "max_repr": opts.MaxRepr, "seconds": opts.Timeout.Seconds(), "tests": opts.Tests})
	ropts := testrun.Options{
		Env: []string{"PYTHONPATH=" + pyDir, "CWMTRACE_OUT=" + repoOut, "CWMTRACE_CONFIG=" + string(conf),
			"PYTHONHASHSEED=0"},
		PythonVersion: opts.PythonVersion, PytestArgs: []string{"-p", "_cwm_repotrace"},
		UnittestModule: "_cwm_repotrace",
		// Each test may record for Timeout and then run on untraced.
		Timeout: time.Duration(len(ids))*(opts.Timeout+30*time.Second) + 2*time.Minute,
	}
	if cmd.Framework == testrun.Shell {
		ropts.Env = append(ropts.Env, "PYTEST_PLUGINS=_cwm_repotrace")
	} else {
		ropts.IDs = ids
	}
	rep, err := testrun.Run(ctx, s, cmd, ropts)
	if err != nil {
		return nil, fmt.Errorf("trace tests: %w", err)
	}
	data, err := s.ReadFile(ctx, repoOut, 0)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read the test recordings: %w", err)
	}
	outcomes := map[string]testrun.Outcome{}
	for _, t := range rep.Tests {
		outcomes[t.ID] = t.Outcome
	}
	got := parseRecordings(data)
	opts.Log.Debug("traced a batch of tests", "tests", len(ids), "recorded", len(got),
		"seconds", time.Since(start).Seconds(), "run", rep.Result.Describe())
	var out []*RawTest
	for _, id := range ids {
		t := got[id]
		if t == nil {
			why := "the test run ended before this test was recorded: " + rep.Result.Describe()
			if rep.Note != "" {
				why += "; " + rep.Note
			}
			t = &RawTest{Test: id, Status: Error, Error: why}
		}
		t.Outcome = outcomes[id]
		out = append(out, t)
	}
	return out, nil
}

// parseRecordings reads repotrace.py's output: one line per test. A line
// that does not decode becomes a RawTest with status Error.
func parseRecordings(data []byte) map[string]*RawTest {
	out := map[string]*RawTest{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		var resp response
		if err := json.Unmarshal(sc.Bytes(), &resp); err != nil || resp.Test == "" {
			continue // a torn last line: the test counts as not recorded
		}
		t := &RawTest{Test: resp.Test, Status: Status(resp.Status), Error: resp.Error, Seconds: resp.Seconds,
			Codes: make([]Code, len(resp.Codes))}
		for i, c := range resp.Codes {
			t.Codes[i] = Code(c)
		}
		frames, err := resp.frames()
		if err != nil {
			t.Status, t.Error = Error, fmt.Sprintf("unreadable recording (a cwm bug): %v", err)
		}
		t.frames = frames
		out[t.Test] = t
	}
	return out
}
