package envbuild

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"testing"

	"cwm/internal/env"
)

func TestCoverageMap(t *testing.T) {
	e := textkitEnv(t)
	c, err := env.LoadCoverage(e)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tests) != e.Counts.Pass || e.Coverage == nil || e.Coverage.Functions < 40 {
		t.Fatalf("coverage: %d tests (want %d), info %+v", len(c.Tests), e.Counts.Pass, e.Coverage)
	}
	refs := c.FindFunctions("levenshtein")
	if len(refs) != 1 || refs[0].File != "textkit/distance.py" || refs[0].Line != 7 {
		t.Fatalf("FindFunctions(levenshtein) = %v", refs)
	}
	tests := c.TestsFor(refs[0])
	for _, want := range []string{"tests/test_distance.py::test_levenshtein[kitten-sitting-3]", "tests/test_distance.py::TestClosest::test_typo"} {
		if !contains(tests, want) {
			t.Errorf("TestsFor(levenshtein) lacks %s", want)
		}
	}
	tc := c.Tests["tests/test_case.py::test_pascal_case"]
	var names []string
	for _, f := range tc.Functions {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "_parts,camel_case,pascal_case,split_camel" {
		t.Errorf("functions of test_pascal_case = %v", names)
	}
	for _, f := range tc.Functions {
		if strings.HasPrefix(f.File, "tests/") {
			t.Errorf("test code in the map: %v", f)
		}
	}
	if len(tc.Lines["textkit/case.py"]) == 0 {
		t.Errorf("no lines of textkit/case.py for test_pascal_case")
	}
}

func TestCoverageUnittestLazy(t *testing.T) {
	e := mustBuild(t, buildOpts(copyRepo(t, "testdata/bareunit")))
	if _, err := env.LoadCoverage(e); err != env.ErrNoCoverage {
		t.Fatalf("LoadCoverage before computing = %v, want ErrNoCoverage", err)
	}
	c, err := EnsureCoverage(context.Background(), testSandboxes, e)
	if err != nil {
		t.Fatal(err)
	}
	tc, ok := c.Tests["test_shapes.CircleTest.test_negative"]
	if !ok || len(tc.Functions) != 1 || tc.Functions[0] != (env.FuncRef{File: "shapes/__init__.py", Name: "circle_area", Line: 4}) {
		t.Errorf("coverage of test_negative = %+v (present %v)", tc, ok)
	}
	if again, err := env.LoadCoverage(env.NewStore(testHome).Get(e.ID)); err != nil || len(again.Tests) != 4 {
		t.Errorf("stored map: %v, %v; want 4 tests", again, err)
	}
}

// TestCoverageScratch builds suites whose test command clears temporary
// directories: tox's {env_tmp_dir} as pytest's basetemp (cleared when
// pytest starts), which must not reach cwm's coverage map; and a suite
// that destroys cwm's scratch itself, whose empty map makes the build
// unusable with the cause, instead of a usable build with no coverage.
func TestCoverageScratch(t *testing.T) {
	cases := []struct {
		name   string
		test   string // tests/test_a.py
		usable bool
		reason []string
	}{
		{"basetemp", "def test_tmp(tmp_path):\n    (tmp_path / 'f').write_text('x')\n\n\ndef test_plain():\n    assert 1\n", true, nil},
		{"scratch destroyed",
			"import os, shutil\n\n\ndef test_break():\n    out = os.environ.get('CWMCOV_OUT')\n    if out:\n" +
				"        d = os.path.dirname(out)\n        shutil.rmtree(d)\n        open(d, 'w').close()\n",
			false, []string{"coverage: the suite has 1 passing tests and the coverage run recorded none", "the coverage run wrote no map"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"tox.ini":         "[tox]\nskipsdist = true\n\n[testenv]\ncommands = pytest --basetemp={env_tmp_dir} tests\n",
				"tests/test_a.py": c.test,
			})
			opts := buildOpts(dir)
			opts.NoCoverage = false
			e := mustBuild(t, opts)
			if e.Usable != c.usable {
				t.Fatalf("Build = usable %v (reason %q), want %v", e.Usable, e.Reason, c.usable)
			}
			for _, w := range c.reason {
				if !strings.Contains(e.Reason, w) {
					t.Errorf("reason %q lacks %q", e.Reason, w)
				}
			}
			if c.usable && (e.Coverage == nil || e.Coverage.Tests != e.Counts.Pass || e.Counts.Pass != 2) {
				t.Errorf("coverage %+v for %v, want every passing test recorded", e.Coverage, e.Counts)
			}
		})
	}
}

// TestBuildProgress checks that the baseline runs and the coverage run
// each say when they start on a progress writer that is not a terminal
// (and then every progress.HeartbeatEvery, as internal/progress tests).
func TestBuildProgress(t *testing.T) {
	dir := writeTree(t, map[string]string{"tests/test_a.py": "def test_a():\n    pass\n"})
	var out bytes.Buffer
	opts := buildOpts(dir)
	opts.NoCoverage, opts.Runs, opts.Progress = false, 2, &out
	if e := mustBuild(t, opts); !e.Usable {
		t.Fatalf("Build = unusable: %s", e.Reason)
	}
	for _, w := range []string{"baseline run 1/2: started\n", "baseline run 2/2: started\n", "coverage run: started\n"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("progress lacks %q:\n%s", w, out.String())
		}
	}
}
