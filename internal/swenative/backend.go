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
// which made a project's editable install with setup.py develop (an
// .egg-link, and the project's root on sys.path through easy-install.pth)
// in two cases: a project without a pyproject.toml (pip took setup.py's
// legacy path), and one whose build backend has no PEP 660 hook (pip fell
// back to it, with the environment's setuptools; pylint 2.15 pins
// setuptools~=62.6 for its build, and setuptools has the hook from 64 on).
// pip 26, which cwm's builds run, takes neither path: it refuses the
// second ("uses a build backend that is missing the 'build_editable'
// hook"), and installs the first by PEP 660, whose import hook for a flat
// layout leaves the root off sys.path (pylint 2.14 then loads none of its
// checkers: astroid finds no module for their files). Both are installed
// in setuptools' compat mode instead, which puts the root on sys.path as
// develop did; the second without build isolation, on the venv's
// setuptools (the first install step's, which has the hook).

// setuptoolsEditable is the first setuptools with build_editable.
const setuptoolsEditable = 64

// harnessDevelop says whether the harness's pip made the project's
// editable install with setup.py develop, given its pyproject.toml's text
// ("" when it has none), and whether because its backend has no hook.
func harnessDevelop(pyproject string) (develop, noHook bool) {
	if pyproject == "" {
		return true, false
	}
	var doc struct {
		BuildSystem struct {
			Requires []string `toml:"requires"`
			Backend  string   `toml:"build-backend"`
		} `toml:"build-system"`
	}
	if _, err := toml.Decode(pyproject, &doc); err != nil {
		return false, false
	}
	if b := doc.BuildSystem.Backend; b != "" && !strings.HasPrefix(b, "setuptools.build_meta") {
		return false, false
	}
	for _, r := range doc.BuildSystem.Requires {
		if env.RequirementName(r) == "setuptools" && belowEditable(r) {
			return true, true
		}
	}
	return false, false
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

// asDevelop is an install line's editable pip install of the project in
// setuptools' compat mode, without build isolation when noHook, run as
// written (its stdin /dev/null, as pipInstall's lines: the build would
// otherwise drop the options). Other lines are returned as they are.
func asDevelop(line string, noHook bool) string {
	w := strings.Fields(line)
	i := slices.Index(w, "install")
	if i < 1 || w[i-1] != "pip" || !slices.Contains(w, "-e") || slices.Contains(w, "--config-settings") {
		return line
	}
	opts := []string{"--config-settings", "editable_mode=compat"}
	if noHook && !slices.Contains(w, "--no-build-isolation") {
		opts = append([]string{"--no-build-isolation"}, opts...)
	}
	return strings.Join(slices.Insert(w, i+1, opts...), " ") + " </dev/null"
}
