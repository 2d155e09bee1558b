package envbuild

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"cwm/internal/env"
	"cwm/internal/errkind"
	"cwm/internal/sandbox"
	"cwm/internal/testrun"
)

//go:embed cwmcov.py
var cwmcovPy []byte

// covDir holds the coverage recorder and covOut, its map, in cwm's
// scratch directory, out of the test command's reach.
const (
	covDir = testrun.ScratchDir + "/cov"
	covOut = covDir + "/out.json"
)

// EnsureCoverage returns the environment's map, computing and storing it
// first if the build did not.
func EnsureCoverage(ctx context.Context, sbs *env.Sandboxes, e *env.Env) (*env.Coverage, error) {
	c, err := env.LoadCoverage(e)
	if !errors.Is(err, env.ErrNoCoverage) {
		return c, err
	}
	if !e.Usable {
		return nil, errkind.Errorf(errkind.Input, "environment %s is not usable: %s", e.ID, e.Reason)
	}
	if _, err := computeCoverage(ctx, sbs, e, io.Discard); err != nil {
		return nil, err
	}
	return env.LoadCoverage(e)
}

// computeCoverage runs the suite once with cwmcov recording each test,
// keeps the tests that pass in every baseline run, and stores the map
// with e (env.SaveCoverage).
func computeCoverage(ctx context.Context, sbs *env.Sandboxes, e *env.Env, log io.Writer) (*env.CoverageInfo, error) {
	start := time.Now()
	s, err := sbs.Open(ctx, e)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if _, err := s.Exec(ctx, sandbox.Cmd{Args: []string{"mkdir", "-p", covDir}}); err != nil {
		return nil, fmt.Errorf("prepare coverage run: %w", err)
	}
	for name, data := range map[string][]byte{"cwmcov.py": cwmcovPy, testrun.PertestModule + ".py": testrun.PertestPy} {
		if err := s.WriteFile(ctx, covDir+"/"+name, data, 0o644); err != nil {
			return nil, fmt.Errorf("prepare coverage run: %w", err)
		}
	}
	opts := testrun.Options{
		Env:           []string{"PYTHONPATH=" + covDir, "CWMCOV_OUT=" + covOut, "CWMCOV_ROOT=/repo"},
		PythonVersion: e.Python, PytestArgs: []string{"-p", "cwmcov"}, UnittestModule: "cwmcov",
	}
	if e.TestCommand.Framework == testrun.Shell {
		// The plugin reaches pytest through its environment only.
		opts.Env = append(opts.Env, "PYTEST_PLUGINS=cwmcov")
	}
	rep, err := testrun.Run(ctx, s, e.TestCommand, opts)
	if err != nil {
		return nil, fmt.Errorf("coverage run: %w", err)
	}
	fmt.Fprintf(log, "\n$ %s\n[%s, %v]\n", strings.Join(rep.Argv, " "), rep.Result.Describe(), rep.Result.Duration.Round(time.Millisecond))
	data, err := s.ReadFile(ctx, covOut, 0)
	if err != nil {
		cause := "the coverage run wrote no map: " + rep.Result.Describe() + testrun.LastLine(rep.Result.Stderr, rep.Result.Stdout)
		if n := len(e.Passing()); n > 0 {
			return nil, &EmptyCoverageError{Passing: n, Cause: cause}
		}
		info := &env.CoverageInfo{Note: cause}
		return info, env.SaveCoverage(e, nil, info)
	}
	var raw struct {
		Tests map[string]struct {
			Functions [][3]any         `json:"functions"`
			Lines     map[string][]int `json:"lines"`
		} `json:"tests"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("read coverage map: %w", err)
	}
	c := env.Coverage{Version: 1, Tests: map[string]env.TestCoverage{}}
	funcs := map[env.FuncRef]bool{}
	for _, id := range e.Passing() {
		r, ok := raw.Tests[id]
		if !ok {
			continue
		}
		tc := env.TestCoverage{Lines: r.Lines}
		for _, f := range r.Functions {
			file, _ := f[0].(string)
			name, _ := f[1].(string)
			line, _ := f[2].(float64)
			ref := env.FuncRef{File: file, Name: name, Line: int(line)}
			tc.Functions = append(tc.Functions, ref)
			funcs[ref] = true
		}
		c.Tests[id] = tc
	}
	if n := len(e.Passing()); n > 0 && len(c.Tests) == 0 {
		return nil, &EmptyCoverageError{Passing: n, Cause: fmt.Sprintf("the map holds %d tests, none of them passing ones: %s%s",
			len(raw.Tests), rep.Result.Describe(), testrun.LastLine(rep.Result.Stderr, rep.Result.Stdout))}
	}
	info := &env.CoverageInfo{File: env.CoverageFile, Tests: len(c.Tests), Functions: len(funcs), Seconds: roundSeconds(time.Since(start))}
	if missing := len(e.Passing()) - len(c.Tests); missing > 0 {
		info.Note = fmt.Sprintf("%d passing tests were not recorded", missing)
	}
	if err := env.SaveCoverage(e, &c, info); err != nil {
		return nil, err
	}
	return info, nil
}

// EmptyCoverageError says that the coverage run of a suite with passing
// tests recorded none of them: a map that finds no function under test
// would leave every later stage with nothing, silently.
type EmptyCoverageError struct {
	Passing int    // the environment's passing tests
	Cause   string // what the coverage run left
}

// Kind is errkind.Input: the repository's test command defeats the
// recording (it deleted the map, or exited before writing it).
func (e *EmptyCoverageError) Kind() errkind.Kind { return errkind.Input }

func (e *EmptyCoverageError) Error() string {
	return fmt.Sprintf("coverage: the suite has %d passing tests and the coverage run recorded none (%s)", e.Passing, e.Cause)
}
