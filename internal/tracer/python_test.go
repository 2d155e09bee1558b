package tracer

import (
	"context"
	"strings"
	"testing"

	"cwm/internal/base/basetest"
	"cwm/internal/env"
)

// The tracer refuses an environment whose Python is not 3.11, saying
// which it has; a manifest that names no Python (made before env.json
// recorded it) is let through.
func TestCheckPython(t *testing.T) {
	for _, c := range []struct{ python, want string }{
		{"3.11.2", ""},
		{"3.11", ""},
		{"", ""},
		{"3.9.2", "tracing environment e1: needs Python 3.11 (this environment has 3.9)"},
		{"3.13.5", "tracing environment e1: needs Python 3.11 (this environment has 3.13)"},
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

// The trace worker itself refuses another Python before it imports the
// tracer (trace func and trace prog run it on the host's Python, not an
// environment's): on the Debian bullseye base, Python 3.9.
func TestWorkerRefusesPython39(t *testing.T) {
	b := basetest.Debian(t, "bullseye")
	p, err := NewPool(context.Background(), testRuntime(t), Options{Workers: 1, Base: b.Rootfs()})
	if err == nil {
		p.Close()
		t.Fatal("a trace worker started on Python 3.9")
	}
	if want := "needs Python 3.11 (this environment has 3.9)"; !strings.Contains(err.Error(), want) {
		t.Errorf("NewPool on bullseye: %v\nwant it to say %q", err, want)
	}
}
