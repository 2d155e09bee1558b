package envbuild

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"cwm/internal/env"
	"cwm/internal/lazyre"
	"cwm/internal/testrun"
)

// An old commit's editable install meets a pip newer than its time. pip
// before 25.3 made a setuptools project's editable install with setup.py
// develop when the build backend had no PEP 660 hook (setuptools has
// build_editable from 64, released 2022-08-11) or the project had no
// pyproject.toml at all; pip 26, which cwm's builds run, installs every
// project by PEP 517 and refuses the first case ("uses a build backend
// that is missing the 'build_editable' hook"). An online build bounds
// resolution by the commit's date, so a project of early 2022 gets a
// setuptools without the hook in its isolated build environment, and
// its editable install fails however its setup.py is written.
//
// cwm then installs it again in the same step, as setup.py develop did
// as closely as PEP 660 allows, in setuptools' compat editable mode
// (the project's root on sys.path, as develop's .egg-link put it):
//
//   - compatIsolated: in the isolated build, with setuptools>=64 (a
//     build constraint), whose bound alone is moved to editableBound when
//     the build's is older (cwmpip.py's per-package bound, as uv's
//     --exclude-newer-package; everything else keeps the commit's bound);
//   - compatVenv, when the project's build requirements pin a setuptools
//     without the hook (pylint's of 2022 pins ~=62.6, which the
//     constraint contradicts): its build requirements with setuptools>=64
//     instead of the pin, installed into the venv, and the project built
//     there without isolation, as develop ran on the venv's setuptools.
//
//   - legacyVenv, when the project declares no build system (no
//     [build-system] in a pyproject.toml, or none at all) and its
//     install failed in an isolated build: pip of the commit's day ran its
//     setup.py in the venv, where what earlier steps installed is
//     importable (lxml of 2022 imports the Cython its tox deps name), so
//     cwm builds it there: setuptools>=64 and wheel into the venv, and the
//     project without isolation, in the compat editable mode.
//
// The step's note says which.
//
// A project whose backend is meson-python is another case (statsmodels,
// scipy, numpy): its editable install leaves an import hook that rebuilds
// the extension modules with the build environment's ninja whenever the
// package is imported, and an isolated build environment is deleted when
// pip ends, so every import fails (FileNotFoundError: .../pip-build-env-
// .../bin/ninja). meson-python says to install it editable without build
// isolation; cwm does (venvBuild): its build requirements into the venv,
// then the project without isolation.

// compatMode is how far an editable install has gone from pip's default.
type compatMode int

const (
	compatNone compatMode = iota
	compatIsolated
	compatVenv
	venvBuild
	legacyVenv
)

// venvBackends are the build backends whose editable installs need their
// build environment at run time, with what their get_requires hooks add
// to the static requirements (meson-python asks for ninja when there is
// none on PATH; an isolated build installs it so).
var venvBackends = map[string][]string{"mesonpy": {"ninja"}}

// editableMode is the mode an editable install starts in: venvBuild for a
// target whose backend needs it, otherwise pip's default.
func (in *installer) editableMode(targets []string, dir string) compatMode {
	for _, t := range targets {
		if _, ok := venvBackends[in.buildSystem(t, dir).Backend]; ok {
			return venvBuild
		}
	}
	return compatNone
}

// noEditableHook matches pip's refusal of an editable install whose build
// backend lacks PEP 660's build_editable.
var noEditableHook = lazyre.New(`missing the 'build_editable' hook`)

// buildFailed matches pip's words for a project's build that failed (not
// a requirement it could not find).
var buildFailed = lazyre.New(`Failed to build '|did not run successfully|subprocess-exited-with-error`)

// setuptoolsConflict matches pip's failure to satisfy the build
// constraint together with the project's own setuptools requirement.
var setuptoolsConflict = lazyre.New(`Cannot install setuptools|setuptools[^\n]*conflicting dependencies|ResolutionImpossible`)

// next is the mode to try after a failure whose output is out, or
// compatNone; legacy says that the targets declare no build system.
func (m compatMode) next(out string, legacy bool) compatMode {
	switch {
	case m == compatNone && noEditableHook().MatchString(out):
		return compatIsolated
	case m == compatIsolated && setuptoolsConflict().MatchString(out):
		return compatVenv
	case legacy && (m == compatNone || m == compatIsolated) && buildFailed().MatchString(out):
		return legacyVenv
	}
	return compatNone
}

// legacyBuild reports whether every editable target (run in dir) declares
// no build system: pip of before PEP 517 ran their setup.py in the venv.
func (in *installer) legacyBuild(targets []string, dir string) bool {
	for _, t := range targets {
		if bs := in.buildSystem(t, dir); bs.Backend != "" || len(bs.Requires) > 0 {
			return false
		}
	}
	return len(targets) > 0
}

// words are the pip options of the mode.
func (m compatMode) words() []string {
	switch m {
	case compatIsolated:
		return []string{"--build-constraint", editableConstraint, "--config-settings", "editable_mode=compat"}
	case compatVenv, legacyVenv:
		return []string{"--no-build-isolation", "--config-settings", "editable_mode=compat"}
	case venvBuild:
		return []string{"--no-build-isolation"}
	}
	return nil
}

// note is the sentence the step's note gets in the mode.
func (m compatMode) note() string {
	if m == venvBuild {
		return "its build backend's editable install rebuilds at import with its build environment: the build requirements installed into the venv and the project without build isolation, as meson-python says"
	}
	if m == legacyVenv {
		return "the project declares no build system and its isolated build failed: built again in the venv without build isolation, with setuptools>=64 (bounded at " + editableBound[:10] + " where the build's bound is older), wheel and what earlier steps installed, in setuptools' compat editable mode, as pip of the commit's day ran its setup.py"
	}
	const why = "the project's build backend has no PEP 660 hook at the commit's date: installed again in setuptools' compat editable mode, as setup.py develop did, "
	if m == compatVenv {
		return why + "its build requirements with setuptools>=64 (bounded at " + editableBound[:10] + " where the build's bound is older) in the venv and no build isolation, as its own pins a setuptools without the hook"
	}
	return why + "with setuptools>=64 in its isolated build (bounded at " + editableBound[:10] + " where the build's bound is older)"
}

// editableBound is the upload bound of setuptools in a compat editable
// install whose build is bounded earlier: setuptools 65.4 by then, the
// fixes of 64's first editable releases in.
const editableBound = "2022-10-01T00:00:00+00:00"

// editableConstraint is the build constraint file of a compatIsolated
// install, written into the sandbox before it runs.
const editableConstraint = "/tmp/cwm-editable-build.txt"

// prepareCompat readies an editable install in mode m of targets (run in
// dir) and says which variables its pip runs with: for compatIsolated
// the build constraint, for compatVenv the build requirements installed
// into the venv.
func (in *installer) prepareCompat(ctx context.Context, m compatMode, targets []string, dir string) ([]string, error) {
	var vars []string
	if m != venvBuild && in.exclude != "" && in.exclude < editableBound[:10] {
		vars = []string{"CWM_PIP_NEWER=setuptools=" + editableBound}
	}
	if m == compatIsolated {
		return vars, in.s.WriteFile(ctx, editableConstraint, []byte("setuptools>=64\n"), 0o644)
	}
	// Upgraded, as an isolated build takes them at their newest within
	// the bound (the venv's seeded setuptools may be older).
	reqs := []string{"--upgrade"}
	venvTools := m == compatVenv || m == legacyVenv
	if venvTools {
		reqs = append(reqs, "setuptools>=64", "wheel")
	}
	for _, t := range targets {
		bs := in.buildSystem(t, dir)
		if m == venvBuild {
			reqs = append(reqs, venvBackends[bs.Backend]...)
		}
		for _, r := range bs.Requires {
			switch env.RequirementName(r) {
			case "setuptools", "wheel":
				if venvTools {
					continue
				}
			}
			reqs = append(reqs, r)
		}
	}
	if len(reqs) == 1 {
		return vars, nil
	}
	report := ""
	if in.mode != env.ModeOffline {
		in.reports++
		report = fmt.Sprintf("/tmp/cwm-pip-report-%d.json", in.reports)
	}
	line := strings.Join(vars, " ") + " " + testrun.Join(append(in.pipWords(report), reqs...))
	res, err := in.exec(ctx, strings.TrimSpace(line), dir)
	if err != nil {
		return nil, err
	}
	if !res.Success() {
		fmt.Fprintf(in.log, "(the build requirements did not install: %s)\n", res.Describe())
		return vars, nil
	}
	return vars, in.readReport(ctx, report)
}

// buildSystem is the [build-system] of an editable target (a path,
// extras cut, run in dir), read from the checkout; empty when it is not
// in the repository or has none.
func (in *installer) buildSystem(target, dir string) (bs buildSystem) {
	t, _, _ := strings.Cut(strings.Trim(target, `'"`), "[")
	if dir == "" {
		dir = env.RepoRoot
	}
	p := path.Clean(path.Join(dir, t))
	rel, ok := strings.CutPrefix(p, env.RepoRoot)
	if !ok {
		return bs
	}
	return readPyproject(filepath.Join(in.repo, filepath.FromSlash(rel))).BuildSystem
}

// joinNote adds a sentence to a step's note.
func joinNote(note, more string) string {
	if note == "" {
		return more
	}
	return note + "; " + more
}
