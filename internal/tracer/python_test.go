package tracer

import (
	"testing"

	"cwm/internal/env"
)

// The tracer takes an environment on Python 3.9 to 3.13 and refuses
// another, saying which it has; a manifest that names no Python (made
// before env.json recorded it) is let through.
func TestCheckPython(t *testing.T) {
	for _, c := range []struct{ python, want string }{
		{"3.9.2", ""},
		{"3.10.13", ""},
		{"3.11", ""},
		{"3.12.1", ""},
		{"3.13.5", ""},
		{"", ""},
		{"3.8.18", "tracing environment e1: needs Python 3.9 to 3.13 (this environment has 3.8)"},
		{"3.14.0", "tracing environment e1: needs Python 3.9 to 3.13 (this environment has 3.14)"},
		{"2.7.18", "tracing environment e1: needs Python 3.9 to 3.13 (this environment has 2.7)"},
		{"3.x", "tracing environment e1: needs Python 3.9 to 3.13 (this environment has 3.x)"},
	} {
		err := CheckPython(&env.Env{ID: "e1", Python: c.python})
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("CheckPython(Python %q) = %q, want %q", c.python, got, c.want)
		}
	}
}
