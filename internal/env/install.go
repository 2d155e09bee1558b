package env

import (
	"fmt"
	"sort"
	"strings"
)

// Install modes (Env.Mode): where an environment's dependencies came from.
const (
	// ModeOnline installs from the package index, through the egress relay,
	// into a virtual environment of its own.
	ModeOnline = "online"
	// ModeOffline installs with what the base has: its site packages, no
	// index, no build isolation.
	ModeOffline = "offline"
	// ModeWheelhouse installs from a directory of staged wheels, with no
	// index and no network.
	ModeWheelhouse = "wheelhouse"
)

// PythonProvenance says why an environment has the Python it has.
type PythonProvenance struct {
	// Requires is the project's requires-python specifier, if any.
	Requires string `json:"requires,omitempty"`
	// From says where the need was read (files, CI matrix, --python).
	From string `json:"from,omitempty"`
	// Wanted is the X.Y version asked for, when one was.
	Wanted string `json:"wanted,omitempty"`
	// Base is the base chosen for it: host or a base's reference.
	Base string `json:"base"`
	// Note says what was given up (no base with the wanted version).
	Note string `json:"note,omitempty"`
}

// LockedPackage is one distribution an online build installed: what
// --locked reinstalls, with its hashes required.
type LockedPackage struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// URL is where the artifact was fetched (an index's file URL, a
	// wheelhouse's file); empty for Local ones.
	URL string `json:"url,omitempty"`
	// SHA256 is the artifact's digest.
	SHA256 string `json:"sha256,omitempty"`
	// Local marks the project itself and other local paths, which are
	// installed from the layer's checkout rather than from the lock.
	Local bool `json:"local,omitempty"`
	// Build marks what an isolated PEP 517 build installed into its own
	// throwaway environment (a build backend and its requirements), not
	// the venv: recorded so that a rebuild from the lock needs no index for
	// the project's build either.
	Build bool `json:"build,omitempty"`
}

// LockRequirements renders a lock as a requirements file with hashes,
// which plain pip installs with --require-hashes: one name==version
// --hash=sha256:... line per package, sorted by name, local ones as
// comments ("# name==version local file:///repo") that pip skips and cwm
// env build --locked reads back, and so are build entries ("# build:
// name==version --hash=sha256:..."): pip must not install them into the
// venv.
func LockRequirements(lock []LockedPackage) string {
	sorted := append([]LockedPackage(nil), lock...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var b strings.Builder
	for _, p := range sorted {
		switch {
		case p.Local:
			fmt.Fprintf(&b, "# %s==%s local %s\n", p.Name, p.Version, p.URL)
		case p.Build:
			fmt.Fprintf(&b, "# build: %s==%s --hash=sha256:%s\n", p.Name, p.Version, p.SHA256)
		case p.SHA256 == "":
			fmt.Fprintf(&b, "%s==%s\n", p.Name, p.Version)
		default:
			fmt.Fprintf(&b, "%s==%s --hash=sha256:%s\n", p.Name, p.Version, p.SHA256)
		}
	}
	return b.String()
}
