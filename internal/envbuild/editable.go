package envbuild

import (
	"context"

	"cwm/internal/lazyre"
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
// as closely as PEP 660 allows: setuptools at least 64 in the isolated
// build (a build constraint), whose bound alone is moved to
// editableBound when the build's is older (cwmpip.py's per-package bound,
// uv's --exclude-newer-package; everything else keeps the commit's
// bound), and setuptools' compat editable mode, which puts the project's
// root on sys.path as develop's .egg-link did. The step's note says so.

// noEditableHook matches pip's refusal of an editable install whose build
// backend lacks PEP 660's build_editable.
var noEditableHook = lazyre.New(`missing the 'build_editable' hook`)

// editableBound is the upload bound of setuptools in a compat editable
// install whose build is bounded earlier: setuptools 65.4 by then, the
// fixes of 64's first editable releases in.
const editableBound = "2022-10-01T00:00:00+00:00"

// editableConstraint is the build constraint file of a compat editable
// install, written into the sandbox before it runs.
const editableConstraint = "/tmp/cwm-editable-build.txt"

// compatWords are the pip options of a compat editable install.
func compatWords() []string {
	return []string{"--build-constraint", editableConstraint, "--config-settings", "editable_mode=compat"}
}

// prepareCompat writes the build constraint of a compat editable install
// and says which variables its pip runs with.
func (in *installer) prepareCompat(ctx context.Context) ([]string, error) {
	if err := in.s.WriteFile(ctx, editableConstraint, []byte("setuptools>=64\n"), 0o644); err != nil {
		return nil, err
	}
	if in.exclude != "" && in.exclude < "2022-10-01" {
		return []string{"CWM_PIP_NEWER=setuptools=" + editableBound}, nil
	}
	return nil, nil
}

// compatNote is the note of a step whose editable install was made in
// compat mode.
var compatNote = "the project's build backend has no PEP 660 hook at the commit's date: installed again with setuptools>=64 in its isolated build (bounded at " + editableBound[:10] + " where the build's bound is older) in setuptools' compat editable mode, as setup.py develop did"

// joinNote adds a sentence to a step's note.
func joinNote(note, more string) string {
	if note == "" {
		return more
	}
	return note + "; " + more
}
