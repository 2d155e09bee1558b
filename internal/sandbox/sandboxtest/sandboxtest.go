// Package sandboxtest gives the tests of a package one sandbox runtime over
// a temporary $CWM_HOME, shared by all of them and removed at the end.
package sandboxtest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	removeAll(home)
	os.Exit(code)
}

// removeAll removes a tree even where tests left directories read-only
// (environment layers are, and an unprivileged user cannot remove their
// entries otherwise).
func removeAll(p string) {
	if os.RemoveAll(p) == nil {
		return
	}
	filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			os.Chmod(path, 0o700)
		}
		return nil
	})
	os.RemoveAll(p)
}
