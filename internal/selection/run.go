package selection

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	_ "embed"

	"cwm/internal/env"
	"cwm/internal/reward"
	"cwm/internal/sandbox"
	"cwm/internal/task"
	"cwm/internal/testrun"
)

//go:embed runner.py
var runnerPy []byte

// Where generated tests and their runner go inside a sandbox: outside the
// repository, so that no test run collects them and no diff shows them.
const (
	genPrefix  = "/tmp/cwm-select-"
	runnerPath = genPrefix + "runner.py"
	specPath   = genPrefix + "spec.json"
)

// TestTimeout bounds one generated test's run.
const TestTimeout = 60 * time.Second

// Counts are the work a selection did, for the summary and the benchmark.
type Counts struct {
	// Sandboxes is how many sandboxes were started.
	Sandboxes int64 `json:"sandboxes"`
	// GeneratedRuns is how many generated tests ran (one per test per
	// tree); RegressionRuns how many regression tests ran (reported by
	// the runner).
	GeneratedRuns  int64 `json:"generated_runs"`
	RegressionRuns int64 `json:"regression_runs"`
}

// Add counts o too.
func (c *Counts) Add(o Counts) {
	c.Sandboxes += o.Sandboxes
	c.GeneratedRuns += o.GeneratedRuns
	c.RegressionRuns += o.RegressionRuns
}

// Sub removes o's counts.
func (c *Counts) Sub(o Counts) {
	c.Sandboxes -= o.Sandboxes
	c.GeneratedRuns -= o.GeneratedRuns
	c.RegressionRuns -= o.RegressionRuns
}

// trees starts the sandboxes of one task's selection and counts what runs
// in them. It is safe for concurrent use.
type trees struct {
	sbs *env.Sandboxes
	e   *env.Env
	t   *task.Task

	sandboxes, generated, regression atomic.Int64
	// ran records every regression test id asked for, so that a test can
	// check that no hidden test ever runs during selection.
	ran func(ids []string)
}

func (tr *trees) counts() Counts {
	return Counts{Sandboxes: tr.sandboxes.Load(), GeneratedRuns: tr.generated.Load(), RegressionRuns: tr.regression.Load()}
}

// unpatched starts a sandbox on the task's unpatched tree (the bug
// planted, no test patch). The caller closes it.
func (tr *trees) unpatched(ctx context.Context) (*sandbox.Sandbox, error) {
	s, err := tr.sbs.Open(ctx, tr.e)
	if err != nil {
		return nil, err
	}
	tr.sandboxes.Add(1)
	if err := reward.ApplyBug(ctx, s, tr.e, tr.t); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// patched starts a sandbox on the unpatched tree with patch applied;
// method says how it went in (reward.ApplyFailed: the sandbox is closed
// and nil).
func (tr *trees) patched(ctx context.Context, patch string) (*sandbox.Sandbox, reward.ApplyMethod, error) {
	s, err := tr.unpatched(ctx)
	if err != nil {
		return nil, "", err
	}
	how, _, err := reward.ApplyCandidate(ctx, s, patch)
	if err != nil || how == reward.ApplyFailed {
		s.Close()
		return nil, how, err
	}
	return s, how, nil
}

// runRecord is one line of runner.py's output.
type runRecord struct {
	Name    string `json:"name"`
	Exit    *int   `json:"exit"`
	Timeout bool   `json:"timeout"`
	Stdout  string `json:"stdout"`
	Stderr  string `json:"stderr"`
}

// runGenerated runs the tests (with code) in s, one after another, and
// returns each one's verdict and detail by index.
func (tr *trees) runGenerated(ctx context.Context, s *sandbox.Sandbox, tests []GeneratedTest) (map[int]Verdict, map[int]string, error) {
	verdicts, details := map[int]Verdict{}, map[int]string{}
	type entry struct {
		Name string `json:"name"`
		Path string `json:"path"`
	}
	var spec struct {
		Cwd     string  `json:"cwd"`
		Timeout float64 `json:"timeout"`
		Tests   []entry `json:"tests"`
	}
	spec.Cwd, spec.Timeout = s.Config().Workdir, TestTimeout.Seconds()
	if err := s.WriteFile(ctx, runnerPath, runnerPy, 0o644); err != nil {
		return nil, nil, err
	}
	for _, g := range tests {
		if g.Code == "" {
			continue
		}
		p := genPrefix + "test_" + strconv.Itoa(g.Index) + ".py"
		if err := s.WriteFile(ctx, p, []byte(g.Code), 0o644); err != nil {
			return nil, nil, err
		}
		spec.Tests = append(spec.Tests, entry{Name: strconv.Itoa(g.Index), Path: p})
	}
	if len(spec.Tests) == 0 {
		return verdicts, details, nil
	}
	b, _ := json.Marshal(spec)
	if err := s.WriteFile(ctx, specPath, b, 0o644); err != nil {
		return nil, nil, err
	}
	res, err := s.Exec(ctx, sandbox.Cmd{Args: []string{"python", runnerPath, specPath},
		Timeout: time.Duration(len(spec.Tests))*TestTimeout + time.Minute, Capture: 8 << 20})
	if err != nil {
		return nil, nil, fmt.Errorf("run generated tests: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(res.Stdout))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r runRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		i, err := strconv.Atoi(r.Name)
		if err != nil {
			continue
		}
		verdicts[i], details[i] = verdictOf(r)
		tr.generated.Add(1)
	}
	// A test the runner never reported (it was killed with the whole run)
	// has no verdict: it counts as Other.
	for _, e := range spec.Tests {
		i, _ := strconv.Atoi(e.Name)
		if _, ok := verdicts[i]; !ok {
			verdicts[i], details[i] = Other, "not reported: the run ended ("+res.Describe()+")"
		}
	}
	return verdicts, details, nil
}

// runTests runs the regression tests ids in s, stopping after maxFail
// failures when maxFail > 0 and the runner is pytest (--maxfail; a
// unittest or shell command runs every test). It returns the ids that
// passed and whether the run stopped early.
func (tr *trees) runTests(ctx context.Context, s *sandbox.Sandbox, ids []string, maxFail int) (map[string]bool, bool, error) {
	if tr.ran != nil {
		tr.ran(ids)
	}
	opts := testrun.Options{IDs: ids, PythonVersion: tr.e.Python, OutputLimit: tr.e.Limits.Output}
	limited := maxFail > 0 && tr.e.TestCommand.Framework == testrun.Pytest
	if limited {
		opts.PytestArgs = []string{"--maxfail=" + strconv.Itoa(maxFail)}
	}
	rep, err := testrun.Run(ctx, s, tr.e.TestCommand, opts)
	if err != nil {
		return nil, false, fmt.Errorf("run regression tests: %w", err)
	}
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	passed := map[string]bool{}
	failed, reported := 0, 0
	for _, x := range rep.Tests {
		if !want[x.ID] {
			continue
		}
		reported++
		tr.regression.Add(1)
		if x.Outcome == testrun.Pass {
			passed[x.ID] = true
		} else if x.Outcome == testrun.Fail || x.Outcome == testrun.Error {
			failed++
		}
	}
	stopped := limited && failed >= maxFail && reported < len(ids)
	return passed, stopped, nil
}
