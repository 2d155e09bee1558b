package tracer

import (
	"strings"

	"cwm/internal/env"
	"cwm/internal/errkind"
)

// Python is the one Python the tracer runs on: cpython.py reads 3.11's
// object layouts, and the trace records code objects by co_qualname (3.11+).
// Porting it to other versions is the work of its own issue; until then an
// environment on another Python is refused before any sandbox opens.
const Python = "3.11"

// CheckPython refuses an environment whose Python is not the tracer's,
// with a sentence saying which it has.
func CheckPython(e *env.Env) error {
	if e == nil {
		return nil
	}
	has := majorMinor(e.Python)
	if has == Python || has == "" { // "": a manifest from before env.json named its Python
		return nil
	}
	return errkind.Errorf(errkind.Input, "tracing environment %s: needs Python %s (this environment has %s)", e.ID, Python, has)
}

// majorMinor is the X.Y of a version such as 3.9.2 (or 3.9).
func majorMinor(v string) string {
	parts := strings.SplitN(strings.TrimSpace(v), ".", 3)
	if len(parts) < 2 {
		return ""
	}
	return parts[0] + "." + parts[1]
}
