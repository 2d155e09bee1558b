package env

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

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

// CoverageFile is the map's file in an environment's directory.
const CoverageFile = "coverage.json"

// LoadCoverage reads the environment's test-to-code map.
func LoadCoverage(e *Env) (*Coverage, error) {
	data, err := os.ReadFile(filepath.Join(e.dir, CoverageFile))
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

// SaveCoverage stores c as e's map and info as its summary in e's
// manifest, the map first: a manifest never points to a map that is not
// there. A nil c records only info (why there is no map).
func SaveCoverage(e *Env, c *Coverage, info *CoverageInfo) error {
	if c != nil {
		out, err := json.Marshal(c)
		if err != nil {
			return err
		}
		if err := writeAtomic(filepath.Join(e.dir, CoverageFile), out); err != nil {
			return fmt.Errorf("write coverage map of %s: %w", e.ID, err)
		}
	}
	e.Coverage = info
	return e.save()
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
