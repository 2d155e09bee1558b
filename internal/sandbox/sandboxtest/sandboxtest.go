// Package sandboxtest gives the tests of a package one sandbox runtime over
// a temporary $CWM_HOME, shared by all of them and removed at the end.
package sandboxtest

import (
	"fmt"
	"os"
	"testing"

	"cwm/internal/sandbox"
)

// Main is a TestMain body: it makes a home named after the package, starts
// a runtime there, hands both to setup, runs the tests, closes the runtime,
// removes the home and exits with the tests' status.
func Main(m *testing.M, pkg string, setup func(rt *sandbox.Runtime, home string)) {
	home, err := os.MkdirTemp("", "cwm-"+pkg+"-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: home})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(home)
		os.Exit(1)
	}
	setup(rt, home)
	code := m.Run()
	rt.Close()
	sandbox.RemoveAll(home)
	os.Exit(code)
}
