package envbuild

import (
	"strings"
	"testing"
	"time"

	"cwm/internal/egress/indextest"
	"cwm/internal/env"
)

// fakeWheelHelper is the Python the test backends write their wheels
// with: cwmproj 1.0, the files given, METADATA, WHEEL and RECORD.
const fakeWheelHelper = `import base64, hashlib, os, zipfile

NAME, VERSION = "cwmproj", "1.0"


def _wheel(directory, files):
    dist = "%s-%s.dist-info" % (NAME, VERSION)
    files = dict(files)
    files[dist + "/METADATA"] = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (NAME, VERSION)
    files[dist + "/WHEEL"] = "Wheel-Version: 1.0\nGenerator: cwm-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(text.encode())))
    record.append(dist + "/RECORD,,")
    files[dist + "/RECORD"] = "\n".join(record) + "\n"
    name = "%s-%s-py3-none-any.whl" % (NAME, VERSION)
    with zipfile.ZipFile(os.path.join(directory, name), "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
    return name


`

// fakeBackend is a setuptools.build_meta of the test's index: PEP 517's
// hooks, build_editable among them only when hook is set (setuptools has
// it from 64 on). Its editable wheel puts the project's src directory on
// sys.path through a .pth, as compat mode does.
func fakeBackend(hook bool) string {
	b := fakeWheelHelper + `def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    src = os.path.join(os.getcwd(), "src", NAME, "__init__.py")
    with open(src) as f:
        return _wheel(wheel_directory, {NAME + "/__init__.py": f.read()})
`
	if hook {
		b += `

def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, {"__editable__.cwmproj.pth": os.path.join(os.getcwd(), "src") + "\n"})
`
	}
	return b
}

// fakeLegacy is what pip builds a project without a [build-system] with:
// setuptools.build_meta's __legacy__, the backend's hooks run after the
// project's setup.py (which may import what it builds with).
const fakeLegacy = `

import types as _types


def _setup_py():
    with open("setup.py") as f:
        exec(f.read(), {"__name__": "__main__", "__file__": "setup.py"})


def _legacy():
    hooks = {"build_wheel": lambda *a, **k: (_setup_py(), build_wheel(*a, **k))[1]}
    if "build_editable" in globals():
        hooks["build_editable"] = lambda *a, **k: (_setup_py(), build_editable(*a, **k))[1]
    return _types.SimpleNamespace(**hooks)


__legacy__ = _legacy()
`

// setuptoolsWheels are a test index's setuptools releases, one before PEP
// 660's hook (62.0, uploaded at old) and one with it (99.0, at hooked), both
// with the legacy backend, and wheel.
func setuptoolsWheels(old, hooked time.Time) []indextest.Wheel {
	return []indextest.Wheel{
		{Name: "setuptools", Version: "62.0", Uploaded: old,
			Files: map[string]string{"setuptools/__init__.py": "", "setuptools/build_meta.py": fakeBackend(false) + fakeLegacy}},
		{Name: "setuptools", Version: "99.0", Uploaded: hooked,
			Files: map[string]string{"setuptools/__init__.py": "", "setuptools/build_meta.py": fakeBackend(true) + fakeLegacy}},
		{Name: "wheel", Version: "0.37.1", Uploaded: old},
	}
}

// valueTest is a test of cwmproj's VALUE, the test projects' one test.
const valueTest = "import unittest\n\nimport cwmproj\n\n\nclass TestProj(unittest.TestCase):\n    def test_value(self):\n        self.assertEqual(cwmproj.VALUE, 42)\n"

// TestLegacyEditable: a project of 2021 with no pyproject.toml whose
// setup.py imports what an earlier step installed into the venv (lxml's of
// 2022 imports the Cython of its tox deps) fails in an isolated build, and
// is built again in the venv without isolation, as pip of its day ran its
// setup.py; the step's note says so, and its tests pass.
func TestLegacyEditable(t *testing.T) {
	old := time.Date(2021, 3, 1, 0, 0, 0, 0, time.UTC)
	hooked := time.Date(2022, 8, 15, 0, 0, 0, 0, time.UTC)
	ix := indextest.Start(t, append(setuptoolsWheels(old, hooked), indextest.Wheel{Name: "cwmcy", Version: "1.0", Uploaded: old})...)
	repo := writeTree(t, map[string]string{
		"setup.py":                "import cwmcy  # the build tool an earlier step installed\n",
		"src/cwmproj/__init__.py": "VALUE = 42\n",
		"tests/test_proj.py":      valueTest,
	})
	opts := onlineOpts(t, repo)
	opts.Mode, opts.Egress, opts.ExcludeNewer = env.ModeOnline, indexPolicy(t, ix), "2022-01-01"
	opts.Install = []string{"pip install cwmcy", "pip install -e ."}
	e := mustBuild(t, opts)
	step := e.Install[len(e.Install)-1]
	if step.Status != "ok" || !strings.Contains(step.Note, "declares no build system") || !strings.Contains(step.Run, "--no-build-isolation") {
		t.Fatalf("the editable install step = %+v; want ok, built in the venv, its note saying why; build log:\n%s", step, readFile(t, e.File(env.BuildLog)))
	}
	if !e.Usable || e.Counts.Pass != 1 {
		t.Errorf("Build(a legacy project whose setup.py imports a venv package) = usable %v, %+v (%s); want its test passing", e.Usable, e.Counts, e.Reason)
	}
}

// TestCompatEditable: a commit whose date bounds its isolated build to a
// setuptools without PEP 660's hook (pip 26 refuses its editable
// install, as pip before 25.3 did not) is installed again in compat
// mode with setuptools>=64 bounded later for that package alone, the
// step's note saying so, and its tests pass; the other dependency keeps
// the commit's bound. A project whose build requirements pin a setuptools
// without the hook is built in the venv, its requirements there.
func TestCompatEditable(t *testing.T) {
	old := time.Date(2021, 3, 1, 0, 0, 0, 0, time.UTC)
	hooked := time.Date(2022, 8, 15, 0, 0, 0, 0, time.UTC)
	ix := indextest.Start(t, append(setuptoolsWheels(old, hooked),
		indextest.Wheel{Name: "cwmdep", Version: "1.0", Uploaded: old},
		indextest.Wheel{Name: "cwmdep", Version: "2.0", Uploaded: hooked, Module: "__version__ = '2.0'\n"})...)
	for _, tc := range []struct{ name, requires, note string }{
		{"isolated", `"setuptools"`, "in its isolated build"},
		// pylint's of 2022 pins ~=62.6: the constraint cannot hold, so
		// the build requirements go into the venv, setuptools>=64 for
		// the pin.
		{"pinned", `"setuptools<63", "cwmdep"`, "in the venv and no build isolation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := writeTree(t, map[string]string{
				"pyproject.toml":          "[build-system]\nrequires = [" + tc.requires + "]\nbuild-backend = \"setuptools.build_meta\"\n",
				"src/cwmproj/__init__.py": "VALUE = 42\n",
				"tests/test_proj.py": `import unittest

import cwmdep
import cwmproj


class TestProj(unittest.TestCase):
    def test_value(self):
        self.assertEqual(cwmproj.VALUE, 42)

    def test_dep(self):
        self.assertEqual(cwmdep.__version__, "1.0")
`,
			})
			opts := onlineOpts(t, repo)
			opts.Mode, opts.Egress, opts.ExcludeNewer = env.ModeOnline, indexPolicy(t, ix), "2022-01-01"
			opts.Install = []string{"pip install -e . cwmdep"}
			e := mustBuild(t, opts)
			var step *env.Step
			for i := range e.Install {
				if strings.Contains(e.Install[i].Command, "pip install -e .") {
					step = &e.Install[i]
				}
			}
			if step == nil || step.Status != "ok" || !strings.Contains(step.Note, tc.note) || !strings.Contains(step.Run, "editable_mode=compat") {
				t.Fatalf("the editable install step = %+v; want ok, in compat mode, its note saying why; build log:\n%s", step, readFile(t, e.File(env.BuildLog)))
			}
			if !e.Usable || e.Counts.Pass != 2 {
				t.Errorf("Build(an editable install of a backend without the hook) = usable %v, %+v (%s); want both tests passing", e.Usable, e.Counts, e.Reason)
			}
			built := false
			for _, p := range e.Lock {
				built = built || p.Name == "setuptools" && p.Version == "99.0"
			}
			if !built {
				t.Errorf("lock = %+v; want the setuptools 99.0 the install was built with", e.Lock)
			}
		})
	}
}

// fakeMeson is a mesonpy backend of the test's index whose editable
// install, like meson-python's, needs its build environment when the
// package is imported: the hook it installs fails once that is gone.
var fakeMeson = fakeWheelHelper + `def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise RuntimeError("only editable installs here")


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    hook = "import os, sys\nif os.path.exists(%r):\n    sys.path.insert(0, %r)\n" % (__file__, os.path.join(os.getcwd(), "src"))
    return _wheel(wheel_directory, {"cwmproj_hook.py": hook, "cwmproj-hook.pth": "import cwmproj_hook\n"})
`

// TestMesonEditable: a project built by meson-python is installed
// editable without build isolation, its build requirements in the venv,
// so that its import hook finds its build environment at test time.
func TestMesonEditable(t *testing.T) {
	ix := indextest.Start(t, indextest.Wheel{Name: "meson-python", Version: "0.18.0",
		Files: map[string]string{"mesonpy/__init__.py": fakeMeson}},
		indextest.Wheel{Name: "ninja", Version: "1.13.0"}) // what meson-python's hook asks for
	repo := writeTree(t, map[string]string{
		"pyproject.toml":          "[build-system]\nrequires = [\"meson-python\"]\nbuild-backend = \"mesonpy\"\n",
		"src/cwmproj/__init__.py": "VALUE = 42\n",
		"tests/test_proj.py":      valueTest,
	})
	opts := onlineOpts(t, repo)
	opts.Mode, opts.Egress, opts.ExcludeNewer = env.ModeOnline, indexPolicy(t, ix), "none"
	opts.Install = []string{"pip install -e ."}
	e := mustBuild(t, opts)
	st := e.Install[len(e.Install)-1]
	if st.Status != "ok" || !strings.Contains(st.Run, "--no-build-isolation") || !strings.Contains(st.Note, "meson-python") {
		t.Fatalf("the editable install step = %+v; want ok, without build isolation, its note saying why; build log:\n%s", st, readFile(t, e.File(env.BuildLog)))
	}
	if !e.Usable || e.Counts.Pass != 1 {
		t.Errorf("Build(a meson-python project, editable) = usable %v, %+v (%s); want its test passing", e.Usable, e.Counts, e.Reason)
	}
}
