// Package env is cwm's environments as every later stage sees them: the
// manifest (env.json) of a repository made executable, the store that
// holds environments under $CWM_HOME/envs, and Sandboxes, which start
// sandboxes on them. It holds no builder code: cwm/internal/envbuild
// builds an environment into a Stage of the store and publishes it.
//
// An environment's layer (the repository at /repo, what its installation
// produced at /venv) is a read-only directory of the store. Only this
// package turns it into a sandbox; stages reach it through the sandboxes
// Sandboxes.Open starts, never through the host's file system, so that a
// second backend (an OCI image, a remote machine) can stand in for the
// directory. See docs/environments.md and docs/architecture.md.
package env

import (
	"path/filepath"
	"time"

	"cwm/internal/testrun"
)

// RepoRoot is where an environment's repository is inside its sandboxes;
// VenvRoot is its virtual environment.
const (
	RepoRoot = "/repo"
	VenvRoot = "/venv"
)

// Env is a built environment: the manifest stored as env.json next to its
// layer.
type Env struct {
	Version     int             `json:"version"`
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Repository  Source          `json:"repository"`
	Revision    string          `json:"revision"`
	Tree        string          `json:"tree"`
	Commit      string          `json:"commit"`
	Base        string          `json:"base"`
	Python      string          `json:"python"`
	Online      bool            `json:"online,omitempty"`
	Install     []Step          `json:"install"`
	Test        Step            `json:"test"`
	TestCommand testrun.Command `json:"test_command"`
	Limits      RunLimits       `json:"limits"`
	Runs        []RunRecord     `json:"runs"`
	Counts      Counts          `json:"counts"`
	// Baseline is kept apart from env.json, in BaselineFile: it grows with
	// the suite, and listing environments must not read it. Store.Get and
	// Store.Resolve fill it in; Store.List leaves it nil.
	Baseline   []TestResult  `json:"-"`
	Missing    []Missing     `json:"missing_dependencies,omitempty"`
	Usable     bool          `json:"usable"`
	Reason     string        `json:"reason,omitempty"`
	Coverage   *CoverageInfo `json:"coverage,omitempty"`
	BuiltAt    time.Time     `json:"built_at"`
	BuildSecs  float64       `json:"build_seconds"`
	LayerBytes int64         `json:"layer_bytes"`
	BuildLog   string        `json:"build_log"`

	// Mode is how dependencies were installed: ModeOnline, ModeOffline
	// or ModeWheelhouse; empty in environments built before it (offline
	// unless Online, the flag of version 1 ids).
	Mode string `json:"mode,omitempty"`
	// PythonFrom says why the build has its Python.
	PythonFrom *PythonProvenance `json:"python_provenance,omitempty"`
	// ExcludeNewer bounds resolution to releases uploaded before it (RFC
	// 3339), when it was bounded.
	ExcludeNewer string `json:"exclude_newer,omitempty"`
	// Locked is set when the build reinstalled a given lock.
	Locked bool `json:"locked,omitempty"`
	// Lock is the set an online or wheelhouse build installed.
	Lock []LockedPackage `json:"lock,omitempty"`

	// Image is set on the environment of a published dataset's image
	// (cwm tasks import): the repository is where the image has it, not
	// at RepoRoot, and there is no venv of cwm's (see image.go).
	Image *ImageSpec `json:"image,omitempty"`

	// dir is the environment's directory: in the store, or the stage of
	// the build making it.
	dir string
	// origin is where the environment came from, read from OriginFile,
	// which this machine's store writes and no artifact carries; nil when
	// it is unknown (treated as foreign).
	origin *Origin
	// building is set on the environment of a build in progress, whose
	// base and limits are the builder's own flags.
	building bool
}

// ManifestVersion is the env.json format version. Version 3 keeps the
// baseline apart, in BaselineFile, so that env.json stays small (at most
// MaxManifest); version 2 held it inline and is migrated on first use.
// Version 2 stores the layer's files with the owners the sandbox sees
// (uid 0 is the sandbox's root), which sandboxes show through an idmapped
// mount; version 1 layers kept files of the sandbox's other users at host
// uids 100001-165535 and are migrated on first use (migrate.go).
const ManifestVersion = 3

// RepoDir is where the repository is inside e's sandboxes: RepoRoot,
// or the working directory of an image's environment.
func (e *Env) RepoDir() string {
	if e.Image != nil {
		return e.Image.Workdir
	}
	return RepoRoot
}

// LayerDir is the host directory of the environment's layer. It is for
// the builder, which writes the layer, and for people (env show says
// where it is). Stages never read it: they see the layer through the
// sandboxes Sandboxes.Open starts.
func (e *Env) LayerDir() string { return filepath.Join(e.dir, "layer") }

// Passing lists the tests that pass in every baseline run.
func (e *Env) Passing() []string {
	var out []string
	for _, t := range e.Baseline {
		if t.Status == string(testrun.Pass) {
			out = append(out, t.ID)
		}
	}
	return out
}

// File is the host path of a file of the environment's directory besides
// its layer: ManifestFile, CoverageFile, BuildLog. Shipping an environment
// to another machine (internal/envoci) carries them with the layer.
func (e *Env) File(name string) string { return filepath.Join(e.dir, name) }
