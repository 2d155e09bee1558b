package swenative

import (
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"cwm/internal/env"
	"cwm/internal/lazyre"
)

// The harness's environments have the pip of their time (before 25.3),
// which installed a project editable even when its build backend had no
// PEP 660 hook: it fell back to setup.py develop (a setup.py, or a shim
// for a setup.cfg) with the environment's setuptools. pip 26, which cwm's
// builds run, refuses such a project ("uses a build backend that is
// missing the 'build_editable' hook"): pylint 2.15 pins setuptools~=62.6
// for its build, and setuptools has the hook from 64 on. The project's
// install is then made without build isolation, with the venv's
// setuptools (the first install step's, which has the hook), which is
// what the fallback used.

// setuptoolsEditable is the first setuptools with build_editable.
const setuptoolsEditable = 64

// noEditableHook says whether pyproject (a pyproject.toml's text) builds
// with setuptools pinned below the release that has build_editable.
func noEditableHook(pyproject string) bool {
	var doc struct {
		BuildSystem struct {
			Requires []string `toml:"requires"`
			Backend  string   `toml:"build-backend"`
		} `toml:"build-system"`
	}
	if _, err := toml.Decode(pyproject, &doc); err != nil {
		return false
	}
	if b := doc.BuildSystem.Backend; b != "" && !strings.HasPrefix(b, "setuptools.build_meta") {
		return false
	}
	for _, r := range doc.BuildSystem.Requires {
		if env.RequirementName(r) == "setuptools" && belowEditable(r) {
			return true
		}
	}
	return false
}

var specifierClause = lazyre.New(`(~=|==|<=|<)\s*(\d+)`)

// belowEditable says whether a setuptools requirement's specifiers allow
// no release from setuptoolsEditable on.
func belowEditable(req string) bool {
	for _, m := range specifierClause().FindAllStringSubmatch(req, -1) {
		major, err := strconv.Atoi(m[2])
		if err != nil {
			continue
		}
		switch m[1] {
		case "~=", "==", "<=":
			// ~=62.6 is <63; ~=62 alone would allow any 6x, which pip
			// forbids anyway (~= needs two parts).
			if major < setuptoolsEditable {
				return true
			}
		case "<":
			if major <= setuptoolsEditable {
				return true
			}
		}
	}
	return false
}

// withoutIsolation is an install line's pip install of the project
// without build isolation, run as written (its stdin /dev/null, as
// pipInstall's lines: the build would otherwise drop the flag).
func withoutIsolation(line string) string {
	w := strings.Fields(line)
	i := slices.Index(w, "install")
	if i < 0 || slices.Index(w, "pip") != i-1 || slices.Contains(w, "--no-build-isolation") {
		return line
	}
	return strings.Join(slices.Insert(w, i+1, "--no-build-isolation"), " ") + " </dev/null"
}
