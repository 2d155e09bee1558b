package tracer

import (
	"strconv"
	"strings"

	"cwm/internal/env"
	"cwm/internal/errkind"
)

// The Pythons the tracer runs on, oldest and newest (minor versions of 3).
// Below 3.9 the code the tracer runs does not parse (it keeps to 3.9's
// syntax and standard library); above 3.13 its reading of f_locals and
// of CPython's object layouts (cpython.py, flocals.py) is untested.
// server.py refuses the same versions at its start.
const (
	OldestPython = 9
	NewestPython = 13
)

// Pythons is that range as the refusals write it.
const Pythons = "3.9 to 3.13"

// CheckPython refuses an environment whose Python the tracer does not run
// on, with a sentence saying which it has.
func CheckPython(e *env.Env) error {
	if e == nil {
		return nil
	}
	has := majorMinor(e.Python)
	if has == "" || supported(has) { // "": a manifest from before env.json named its Python
		return nil
	}
	return errkind.Errorf(errkind.Input, "tracing environment %s: needs Python %s (this environment has %s)", e.ID, Pythons, has)
}

// supported says whether an X.Y version is one the tracer runs on.
func supported(xy string) bool {
	major, minor, _ := strings.Cut(xy, ".")
	n, err := strconv.Atoi(minor)
	return major == "3" && err == nil && n >= OldestPython && n <= NewestPython
}

// majorMinor is the X.Y of a version such as 3.9.2 (or 3.9).
func majorMinor(v string) string {
	parts := strings.SplitN(strings.TrimSpace(v), ".", 3)
	if len(parts) < 2 {
		return ""
	}
	return parts[0] + "." + parts[1]
}
