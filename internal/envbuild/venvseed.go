package envbuild

import (
	"context"
	"fmt"
)

// A virtual environment made by python -m venv on Python 3.11 and older
// has setuptools (ensurepip installs the copy its Python ships with:
// Debian's /usr/share/python-wheels, or ensurepip's _bundled), and so did
// tox's and virtualenv's: the code of those years imports pkg_resources
// without declaring setuptools (pytest's own tests of 2022 use it, and
// skip without it). An online build's venv is made --without-pip, which
// leaves setuptools out too, so on those Pythons cwm seeds it from the
// same wheel, offline, as python -m venv would have; not in the lock,
// which holds what the steps installed (a --locked rebuild seeds it
// again). Python 3.12's ensurepip stopped installing it, and so does
// this; so does a build whose steps install with uv, whose venvs have no
// seed. A setuptools already there (a lock's, linked) is left alone.

// seedScript is run by the venv's Python with cwm's pip launcher as its
// argument.
const seedScript = `import glob, importlib.util, os, subprocess, sys
if sys.version_info >= (3, 12) or importlib.util.find_spec("setuptools"):
    sys.exit(0)
import ensurepip
dirs = [os.path.join(os.path.dirname(ensurepip.__file__), "_bundled"), "/usr/share/python-wheels"]
def newest(name):
    found = sorted(w for d in dirs for w in glob.glob(os.path.join(d, name + "-*.whl")))
    return found[-1:]
wheels = newest("setuptools")
if not wheels:
    print("cwm: no setuptools wheel of this Python's to seed the venv with")
    sys.exit(0)
# Debian's setuptools wheel of bullseye leaves pkg_resources to a wheel
# of its own, which its venvs get too (the "pkg-resources==0.0.0" of pip
# freeze there).
wheels += newest("pkg_resources")
sys.exit(subprocess.call([sys.executable, sys.argv[1], "install", "--no-index", "--no-deps",
    "--disable-pip-version-check", "--no-input", "--no-compile", "-q"] + wheels))
`

// seedVenv seeds an online build's venv with its Python's setuptools
// where python -m venv would have. A failure is logged, not fatal: the
// dependency check names what is missing.
func (in *installer) seedVenv(ctx context.Context) {
	line := "/venv/bin/python - " + toolsPipMain + " <<'CWM_SEED'\n" + seedScript + "CWM_SEED"
	fmt.Fprintf(in.log, "\n$ (cwm: setuptools for the venv, as python -m venv installs it on Python 3.11 and older)\n")
	res, err := in.execQuiet(ctx, line, "")
	if err == nil && !res.Success() {
		fmt.Fprintf(in.log, "(not seeded: %s)\n", res.Describe())
	}
}
