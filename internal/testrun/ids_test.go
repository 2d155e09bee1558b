package testrun

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/sandbox"
)

// filesSandbox starts a sandbox whose /repo holds files (path -> content).
func filesSandbox(t *testing.T, files map[string]string) *sandbox.Sandbox {
	t.Helper()
	layer := t.TempDir()
	for name, content := range files {
		p := filepath.Join(layer, "repo", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return layerSandbox(t, layer)
}

// idsRepo is a suite with the shapes whose ids JUnit XML gets wrong: a
// test class inherited from another module (itsdangerous), a base class in
// a package's __init__.py (cachetools), parametrised tests, doctests, and
// for unittest a load_tests hook.
var idsRepo = map[string]string{
	"pkg/__init__.py": "",
	"pkg/calc.py": `def double(x):
    """
    >>> double(2)
    4
    """
    return 2 * x
`,
	"tests/__init__.py": `import unittest


class CacheTest(unittest.TestCase):
    def test_clear(self):
        self.assertEqual(1, 1)
`,
	"tests/test_base.py": `import pytest


class TestSerializer:
    def test_kwargs(self):
        assert True

    @pytest.mark.parametrize("v", [1, "a b", "x::y"])
    def test_param(self, v):
        assert v != 1
`,
	"tests/test_timed.py": `from tests.test_base import TestSerializer


class TestTimedSerializer(TestSerializer):
    def test_own(self):
        assert True
`,
	"tests/test_cache.py": `from tests import CacheTest


class LRUCacheTest(CacheTest):
    def test_lru(self):
        pass
`,
	"tests/test_load.py": `import doctest
import unittest

import pkg.calc


class Generated(unittest.TestCase):
    def check(self):
        pass


def load_tests(loader, tests, pattern):
    suite = unittest.TestSuite()
    suite.addTest(Generated("check"))
    suite.addTest(doctest.DocTestSuite(pkg.calc))
    return suite
`,
}

// checkIDs runs line in a sandbox on idsRepo, compares its ids and
// outcomes with want, and then runs every id alone: it must run exactly
// that test, with the same outcome.
func checkIDs(t *testing.T, line string, want map[string]Outcome) {
	t.Helper()
	s := filesSandbox(t, idsRepo)
	ctx := context.Background()
	c, err := Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(ctx, s, c, Options{Python: python})
	if err != nil {
		t.Fatal(err)
	}
	got := outcomes(rep.Tests)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ids mismatch (-want +got):\n%s\nstdout: %s\nstderr: %s", diff, rep.Result.Stdout, rep.Result.Stderr)
	}
	for _, tt := range rep.Tests {
		if tt.Outcome == Fail && tt.Message == "" {
			t.Errorf("%s failed without a message", tt.ID)
		}
	}
	ids := make([]string, 0, len(got))
	for id := range got {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		one, err := Run(ctx, s, c, Options{Python: python, IDs: []string{id}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]Outcome{id: got[id]}, outcomes(one.Tests)); diff != "" {
			t.Errorf("running %s alone (-want +got):\n%s\nstderr: %s", id, diff, one.Result.Stderr)
		}
	}
}

// TestPytestIDsRoundTrip checks that the ids of a run are pytest's own node
// ids, and that each one, given back, runs exactly that test with the
// same outcome. test_load.py's class has no test_ method and pytest
// ignores load_tests: it collects nothing there, and cwm invents no id.
func TestPytestIDsRoundTrip(t *testing.T) {
	checkIDs(t, "python -m pytest --doctest-modules pkg tests", map[string]Outcome{
		"pkg/calc.py::pkg.calc.double":                               Pass,
		"tests/test_base.py::TestSerializer::test_kwargs":            Pass,
		"tests/test_base.py::TestSerializer::test_param[1]":          Fail,
		"tests/test_base.py::TestSerializer::test_param[a b]":        Pass,
		"tests/test_base.py::TestSerializer::test_param[x::y]":       Pass,
		"tests/test_timed.py::TestSerializer::test_kwargs":           Pass,
		"tests/test_timed.py::TestSerializer::test_param[1]":         Fail,
		"tests/test_timed.py::TestSerializer::test_param[a b]":       Pass,
		"tests/test_timed.py::TestSerializer::test_param[x::y]":      Pass,
		"tests/test_timed.py::TestTimedSerializer::test_kwargs":      Pass,
		"tests/test_timed.py::TestTimedSerializer::test_own":         Pass,
		"tests/test_timed.py::TestTimedSerializer::test_param[1]":    Fail,
		"tests/test_timed.py::TestTimedSerializer::test_param[a b]":  Pass,
		"tests/test_timed.py::TestTimedSerializer::test_param[x::y]": Pass,
		"tests/test_cache.py::CacheTest::test_clear":                 Pass,
		"tests/test_cache.py::LRUCacheTest::test_clear":              Pass,
		"tests/test_cache.py::LRUCacheTest::test_lru":                Pass,
	})
}

// TestUnittestIDsRoundTrip checks the same for unittest: inherited test
// methods, a base class in __init__.py and tests a load_tests hook makes,
// a doctest among them (unittest cannot load pkg.calc.double by name; cwm's
// loader finds it in the suite discovery builds).
func TestUnittestIDsRoundTrip(t *testing.T) {
	checkIDs(t, "python -m unittest discover -s tests -t . -p 'test_[cl]*.py'", map[string]Outcome{
		"tests.CacheTest.test_clear":               Pass,
		"tests.test_cache.LRUCacheTest.test_clear": Pass,
		"tests.test_cache.LRUCacheTest.test_lru":   Pass,
		"tests.test_load.Generated.check":          Pass,
		"pkg.calc.double":                          Pass,
	})
}
