package envbuild

import (
	"os"
	"path/filepath"
	"testing"

	"cwm/internal/egress/indextest"
)

// TestSeedVenv: an online (here wheelhouse) build's venv on Python 3.11
// has setuptools, as python -m venv's would: a test that imports
// pkg_resources without declaring it passes; it is not in the lock.
func TestSeedVenv(t *testing.T) {
	house, _ := writeWheels(t, indextest.Wheel{Name: "cwmdep", Version: "1.0"})
	repo := writeTree(t, map[string]string{
		"requirements.txt": "cwmdep\n",
		"test_seed.py": `import unittest

import pkg_resources


class TestSeed(unittest.TestCase):
    def test_dist(self):
        self.assertEqual(pkg_resources.get_distribution("cwmdep").version, "1.0")
`,
	})
	opts := onlineOpts(t, repo)
	opts.Wheelhouse = house
	e := mustBuild(t, opts)
	if !e.Usable || e.Counts.Pass != 1 {
		t.Errorf("Build(a test importing pkg_resources) = usable %v, %+v (%s); want it passing", e.Usable, e.Counts, e.Reason)
	}
	for _, p := range e.Lock {
		if p.Name == "setuptools" {
			t.Errorf("lock = %+v; the venv's seed is not a step's install", e.Lock)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(e.LayerDir(), "venv", "lib", "python3.11", "site-packages", "setuptools-*.dist-info")); len(m) != 1 {
		entries, _ := os.ReadDir(filepath.Join(e.LayerDir(), "venv", "lib", "python3.11", "site-packages"))
		t.Errorf("the venv's setuptools: %v (site-packages: %v)", m, entries)
	}
}
