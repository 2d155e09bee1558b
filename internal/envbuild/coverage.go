package envbuild

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"cwm/internal/sandbox"
	"cwm/internal/testrun"
)

//go:embed cwmcov.py
var cwmcovPy []byte

// FuncRef names a function of the repository: its file (relative to the
// repository root), qualified name and first line.
type FuncRef struct {
	File string `json:"file"`
	Name string `json:"name"`
	Line int    `json:"line"`
}

func (f FuncRef) String() string { return fmt.Sprintf("%s:%d %s", f.File, f.Line, f.Name) }

// TestCoverage is what one test executes.
type TestCoverage struct {
	Functions []FuncRef        `json:"functions"`
	Lines     map[string][]int `json:"lines"`
}

// Coverage is an environment's test-to-code map, for the tests that pass
// in every baseline run.
type Coverage struct {
	Version int                     `json:"version"`
	Tests   map[string]TestCoverage `json:"tests"`
}

// CoverageInfo summarises the map in the manifest.
type CoverageInfo struct {
	File      string  `json:"file"`
	Tests     int     `json:"tests"`
	Functions int     `json:"functions"`
	Seconds   float64 `json:"seconds"`
	Note      string  `json:"note,omitempty"`
}

// ErrNoCoverage is returned by LoadCoverage for an environment whose map
// has not been computed.
var ErrNoCoverage = errors.New("no coverage map")

const coverageFile = "coverage.json"

// LoadCoverage reads the environment's test-to-code map.
func LoadCoverage(e *Env) (*Coverage, error) {
	data, err := os.ReadFile(filepath.Join(e.Dir, coverageFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoCoverage
	}
	if err != nil {
		return nil, fmt.Errorf("read coverage of %s: %w", e.ID, err)
	}
	var c Coverage
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("read coverage of %s: %w", e.ID, err)
	}
	return &c, nil
}

// EnsureCoverage returns the environment's map, computing and storing it
// first if the build did not.
func EnsureCoverage(ctx context.Context, rt *sandbox.Runtime, e *Env) (*Coverage, error) {
	c, err := LoadCoverage(e)
	if !errors.Is(err, ErrNoCoverage) {
		return c, err
	}
	if !e.Usable {
		return nil, fmt.Errorf("environment %s is not usable: %s", e.ID, e.Reason)
	}
	info, err := computeCoverage(ctx, rt, e.SandboxConfig(), e, e.Dir, io.Discard)
	if err != nil {
		return nil, err
	}
	e.Coverage = info
	if err := e.save(); err != nil {
		return nil, fmt.Errorf("record coverage of %s: %w", e.ID, err)
	}
	return LoadCoverage(e)
}

// computeCoverage runs the suite once with cwmcov recording each test,
// keeps the tests that pass in every baseline run, and writes the map to
// dir/coverage.json.
func computeCoverage(ctx context.Context, rt *sandbox.Runtime, cfg sandbox.Config, e *Env, dir string, log io.Writer) (*CoverageInfo, error) {
	start := time.Now()
	s, err := rt.New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("start sandbox: %w", err)
	}
	defer s.Close()
	if _, err := s.Exec(ctx, sandbox.Cmd{Args: []string{"mkdir", "-p", "/tmp/cwmcov"}}); err != nil {
		return nil, fmt.Errorf("prepare coverage run: %w", err)
	}
	for name, data := range map[string][]byte{"cwmcov.py": cwmcovPy, testrun.PertestModule + ".py": testrun.PertestPy} {
		if err := s.WriteFile(ctx, "/tmp/cwmcov/"+name, data, 0o644); err != nil {
			return nil, fmt.Errorf("prepare coverage run: %w", err)
		}
	}
	opts := testrun.Options{
		Env:           []string{"PYTHONPATH=/tmp/cwmcov", "CWMCOV_OUT=/tmp/cwmcov/out.json", "CWMCOV_ROOT=/repo"},
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
	data, err := s.ReadFile(ctx, "/tmp/cwmcov/out.json", 0)
	if err != nil {
		return &CoverageInfo{Note: "the coverage run wrote no map: " + rep.Result.Describe() + testrun.LastLine(rep.Result.Stderr)}, nil
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
	c := Coverage{Version: 1, Tests: map[string]TestCoverage{}}
	funcs := map[FuncRef]bool{}
	for _, id := range e.Passing() {
		r, ok := raw.Tests[id]
		if !ok {
			continue
		}
		tc := TestCoverage{Lines: r.Lines}
		for _, f := range r.Functions {
			file, _ := f[0].(string)
			name, _ := f[1].(string)
			line, _ := f[2].(float64)
			ref := FuncRef{File: file, Name: name, Line: int(line)}
			tc.Functions = append(tc.Functions, ref)
			funcs[ref] = true
		}
		c.Tests[id] = tc
	}
	out, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	if err := writeAtomic(filepath.Join(dir, coverageFile), out); err != nil {
		return nil, fmt.Errorf("write coverage map: %w", err)
	}
	info := &CoverageInfo{File: coverageFile, Tests: len(c.Tests), Functions: len(funcs), Seconds: roundSeconds(time.Since(start))}
	if missing := len(e.Passing()) - len(c.Tests); missing > 0 {
		info.Note = fmt.Sprintf("%d passing tests were not recorded", missing)
	}
	return info, nil
}

// FuncCoverage is a function and the passing tests that execute it.
type FuncCoverage struct {
	Func  FuncRef  `json:"function"`
	Tests []string `json:"tests"`
}

// Functions lists every covered function with its tests, by file and line.
func (c *Coverage) Functions() []FuncCoverage {
	by := map[FuncRef][]string{}
	for id, tc := range c.Tests {
		for _, f := range tc.Functions {
			by[f] = append(by[f], id)
		}
	}
	out := make([]FuncCoverage, 0, len(by))
	for f, ids := range by {
		sort.Strings(ids)
		out = append(out, FuncCoverage{Func: f, Tests: ids})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Func, out[j].Func
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Name < b.Name
	})
	return out
}

// TestsFor returns the passing tests that execute f, sorted.
func (c *Coverage) TestsFor(f FuncRef) []string {
	var out []string
	for id, tc := range c.Tests {
		for _, g := range tc.Functions {
			if g == f {
				out = append(out, id)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// FindFunctions returns the covered functions a query names: a qualified
// name ("Parser.parse"), its last part ("parse"), "FILE:NAME" or
// "FILE:LINE".
func (c *Coverage) FindFunctions(query string) []FuncRef {
	var out []FuncRef
	for _, fc := range c.Functions() {
		f := fc.Func
		switch {
		case f.Name == query,
			strings.HasSuffix(f.Name, "."+query),
			query == f.File+":"+f.Name,
			query == fmt.Sprintf("%s:%d", f.File, f.Line):
			out = append(out, f)
		}
	}
	return out
}
