package envbuild

import (
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
