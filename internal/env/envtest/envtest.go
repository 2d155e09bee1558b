// Package envtest makes environments for tests without building them: a
// layer a test wrote by hand (a repository at repo/, perhaps a venv/)
// becomes an environment of a store, which sandboxes start on as they do
// on a built one.
package envtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"cwm/internal/env"
)

// Put stores the layer directory layer (moved, not copied) as the usable
// environment id in the store under home, with the host's system
// directories as its base, and returns it.
func Put(t testing.TB, home, id, layer string) *env.Env {
	t.Helper()
	st := env.NewStore(home)
	dir := filepath.Join(st.Dir(), id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(layer, filepath.Join(dir, "layer")); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(env.Env{Version: env.ManifestVersion, ID: id, Name: id, Base: "host", Usable: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "env.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	e := st.Get(id)
	if e == nil {
		t.Fatalf("environment %s is not in the store it was put in", id)
	}
	return e
}
