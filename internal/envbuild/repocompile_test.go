package envbuild

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRepoCompile: the warm-up compiles a package's modules and the test
// files into the layer, and leaves a directory of data files that happen
// to be Python alone (black's tests/data/cases): a test that lists it
// sees what a checkout has.
func TestRepoCompile(t *testing.T) {
	repo := writeTree(t, map[string]string{
		"pkg/__init__.py":          "",
		"pkg/mod.py":               "VALUE = 1\n",
		"tests/data/cases/case.py": "x = 1\n",
		"tests/test_data.py": `import os
import unittest

import pkg.mod


class TestData(unittest.TestCase):
    def test_listing(self):
        here = os.path.join(os.path.dirname(__file__), "data", "cases")
        self.assertEqual(sorted(os.listdir(here)), ["case.py"])
`,
	})
	e := mustBuild(t, buildOpts(repo))
	if !e.Usable || e.Counts.Pass != 1 {
		t.Errorf("Build(a test that lists its data directory) = usable %v, %+v (%s); want it passing", e.Usable, e.Counts, e.Reason)
	}
	layer := filepath.Join(e.LayerDir(), "repo")
	for _, dir := range []string{"pkg/__pycache__", "tests/__pycache__"} {
		if m, _ := filepath.Glob(filepath.Join(layer, dir, "*.pyc")); len(m) == 0 {
			t.Errorf("%s: no bytecode in the layer", dir)
		}
	}
	if _, err := os.Stat(filepath.Join(layer, "tests/data/cases/__pycache__")); !os.IsNotExist(err) {
		t.Errorf("tests/data/cases/__pycache__ is in the layer (%v)", err)
	}
}
