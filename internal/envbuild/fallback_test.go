package envbuild

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/env"
)

// TestImportRootFallback builds a src-layout project whose build backend
// cannot run here (flit_core>=4 with a PEP 639 license string, where
// Debian has flit_core 3.8): the editable install fails in its build step,
// and the environment still works with src/ on the venv's path, as its
// provenance says, and with the version module the VCS hook would write.
func TestImportRootFallback(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"pyproject.toml": `[build-system]
requires = ["flit_core>=4,<5"]
build-backend = "flit_core.buildapi"

[project]
name = "shout"
version = "1.0"
license = "MIT"
dependencies = ["packaging"]

[tool.hatch]
build.hooks.vcs.version-file = "src/shout/_version.py"
`,
		"src/shout/__init__.py": "from shout._version import __version__\n\n\ndef shout(s):\n    return s.upper() + '!'\n",
		"tests/test_shout.py":   "from shout import shout\n\n\ndef test_shout():\n    assert shout('a') == 'A!'\n",
	})
	st := lastInstallStep(t, dir)
	if st.Status != "ok" || !strings.Contains(st.Provenance, "fallback: import root on the path") ||
		!strings.Contains(st.Note, "/repo/src put on the path") || !strings.Contains(st.Note, "the build step failed (") ||
		!strings.Contains(st.Note, "version file written: /repo/src/shout/_version.py") {
		t.Errorf("install step = %s %q, provenance %q; want ok with the fallback said", st.Status, st.Note, st.Provenance)
	}
	if strings.Contains(st.Note, "See above for details") {
		t.Errorf("install note quotes pip's last line, not the cause: %q", st.Note)
	}
}

// TestImportRootFallbackNamespace builds a project whose package is a
// portion of a namespace (src/nsp/mod, no src/nsp/__init__.py) while an
// older distribution of the same name, installed by its CI first, declares
// the namespace the legacy way (an -nspkg.pth file, as Debian's zope.*
// packages do): with the import root merely on the path, the old copy
// wins; the fallback makes the repository's portion come first. The
// environment's Python starts without a word on stderr: all of the .pth
// line runs.
func TestImportRootFallbackNamespace(t *testing.T) {
	dir := writeTree(t, map[string]string{
		".github/workflows/ci.yml": `on: push
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: pip install ./legacy
      - run: pip install -e .
      - run: pytest tests
`,
		"legacy/setup.py": `from setuptools import setup
setup(name="nsp.mod", version="1.0", packages=["nsp", "nsp.mod"], namespace_packages=["nsp"])
`,
		"legacy/nsp/__init__.py":     "__import__('pkg_resources').declare_namespace(__name__)\n",
		"legacy/nsp/mod/__init__.py": "VERSION = 1\n",
		"pyproject.toml": `[build-system]
requires = ["flit_core>=4,<5"]
build-backend = "flit_core.buildapi"

[project]
name = "nsp.mod"
version = "2.0"
license = "MIT"
`,
		"src/nsp/mod/__init__.py": "VERSION = 2\n",
		"tests/test_ns.py": `import subprocess, sys
import nsp.mod


def test_version():
    assert nsp.mod.VERSION == 2, nsp.mod.__file__
    start = subprocess.run([sys.executable, "-c", "pass"], capture_output=True, text=True)
    assert start.stderr == "", start.stderr
`,
	})
	st := lastInstallStep(t, dir)
	if !strings.Contains(st.Provenance, "fallback: import root on the path") || !strings.Contains(st.Run, `p.insert(0, \"/repo/src/nsp\")`) {
		t.Errorf("install step = %s %q, run %q; want the fallback with the namespace's portion first", st.Status, st.Provenance, st.Run)
	}
}

// lastInstallStep builds the project in dir, which must be usable with its
// one test passing, and returns its last install step.
func lastInstallStep(t *testing.T, dir string) env.Step {
	t.Helper()
	e := mustBuild(t, buildOpts(dir))
	if !e.Usable || e.Counts.Pass != 1 {
		t.Fatalf("Build = usable %v, %v (reason %q)", e.Usable, e.Counts, e.Reason)
	}
	return e.Install[len(e.Install)-1]
}

func TestNamespacePortions(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"zope/interface/__init__.py": "",
		"zope/event/__init__.py":     "",
		"pkg/__init__.py":            "",
		"tests/test_a.py":            "",
		"tests/helpers/__init__.py":  "",
		"docs/conf.py":               "",
		"not-a-name/x/__init__.py":   "",
	})
	if got := namespacePortions(dir); strings.Join(got, " ") != "zope" {
		t.Errorf("namespacePortions = %q, want [zope]", got)
	}
}

func TestHasPythonSources(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"ns/src/zope/interface/__init__.py": "", // a namespace package: no src/zope/__init__.py
		"flat/src/mod.py":                   "",
		"none/src/README":                   "",
	})
	for sub, want := range map[string]bool{"ns/src": true, "flat/src": true, "none/src": false, "missing/src": false} {
		if got := hasPythonSources(filepath.Join(dir, sub)); got != want {
			t.Errorf("hasPythonSources(%s) = %v, want %v", sub, got, want)
		}
	}
}

// TestInstallStepsAsWritten builds a project whose CI installs in ways
// cwm cannot take apart: a pipeline into pip, which must install into
// the environment (the venv has no pip; the one on PATH is the system's),
// and system packages behind sudo in a line of commands, skipped as a
// plain apt-get is.
func TestInstallStepsAsWritten(t *testing.T) {
	dir := writeTree(t, map[string]string{
		".github/workflows/ci.yml": `on: push
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: sudo apt-get update && sudo -E apt-get install -y libnothing-dev
      - run: echo ./dep | pip install --no-build-isolation --no-index -r /dev/stdin
      - run: pytest tests
`,
		"dep/setup.py":      "from setuptools import setup\nsetup(name='cwmdep', version='1.0', py_modules=['cwmdep'])\n",
		"dep/cwmdep.py":     "VALUE = 7\n",
		"tests/test_dep.py": "import cwmdep\n\n\ndef test_dep():\n    assert cwmdep.VALUE == 7\n",
	})
	e := mustBuild(t, buildOpts(dir))
	if !e.Usable || e.Counts.Pass != 1 {
		t.Fatalf("Build = usable %v, %v (reason %q)\ninstall %+v", e.Usable, e.Counts, e.Reason, e.Install)
	}
	var got []string
	for _, st := range e.Install {
		got = append(got, st.Status+" "+st.Command)
	}
	want := []string{
		"ok python3 -m venv --system-site-packages --without-pip /venv",
		"skipped sudo apt-get update && sudo -E apt-get install -y libnothing-dev",
		"ok echo ./dep | pip install --no-build-isolation --no-index -r /dev/stdin",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("install steps mismatch (-want +got):\n%s", diff)
	}
}
