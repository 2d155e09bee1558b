package env

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cwm/internal/errkind"
)

// putEnv stores a manifest with the given fields under home, as a build
// would, and returns the environment read back.
func putEnv(t *testing.T, st *Store, id, name string, builtAt time.Time, usable bool) {
	t.Helper()
	dir := filepath.Join(st.Dir(), id)
	if err := os.MkdirAll(filepath.Join(dir, "layer", "repo"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(Env{Version: ManifestVersion, ID: id, Name: name, BuiltAt: builtAt, Usable: usable})
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Resolve takes an id, a unique prefix or a name (the newest usable build
// of it), and says which kind of error a bad reference is.
func TestResolve(t *testing.T) {
	st := NewStore(t.TempDir())
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	putEnv(t, st, "aaaa1111", "calc", t0, true)
	putEnv(t, st, "aaaa2222", "calc", t0.Add(time.Hour), true)
	putEnv(t, st, "bbbb3333", "other", t0, false)
	// A failed rebuild of calc, newer than the usable ones.
	putEnv(t, st, "cccc4444", "calc", t0.Add(2*time.Hour), false)
	for _, c := range []struct {
		ref  string
		id   string
		kind errkind.Kind
	}{
		{"aaaa1111", "aaaa1111", 0},
		{"bbbb", "bbbb3333", 0},
		{"calc", "aaaa2222", 0}, // the newest usable one, not the failed rebuild
		{"cccc", "cccc4444", 0},
		{"aaaa", "", errkind.Input},
		{"nope", "", errkind.NotFound},
		{"", "", errkind.Input},
	} {
		e, err := st.Resolve(c.ref)
		switch {
		case c.id != "" && (err != nil || e.ID != c.id):
			t.Errorf("Resolve(%q) = %v, %v; want %s", c.ref, e, err, c.id)
		case c.id == "" && errkind.Of(err) != c.kind:
			t.Errorf("Resolve(%q) error = %v (%v), want one of kind %v", c.ref, err, errkind.Of(err), c.kind)
		}
	}
	envs, err := st.List()
	if err != nil || len(envs) != 4 || envs[2].ID != "aaaa2222" {
		t.Errorf("List() = %d environments, %v; want 4, oldest first", len(envs), err)
	}
	if e := st.Get("bbbb3333"); e == nil || e.LayerDir() != filepath.Join(st.Dir(), "bbbb3333", "layer") {
		t.Errorf("Get(bbbb3333) = %+v", e)
	}
	removed, err := st.GC()
	if err != nil || len(removed) != 2 {
		t.Errorf("GC() = %v, %v; want the unusable environments removed", removed, err)
	}
	if err := st.Remove(st.Get("aaaa1111")); err != nil || st.Get("aaaa1111") != nil {
		t.Errorf("Remove: %v", err)
	}
}

// A crashed build (its process gone without cleaning up) leaves a hidden
// directory: never listed, kept by GC while its builder holds the lock,
// removed once it does not.
func TestCrashedBuild(t *testing.T) {
	store := NewStore(t.TempDir())
	stg, err := store.NewStage()
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(stg.Dir(), "layer", "repo"), 0o755)
	os.WriteFile(filepath.Join(stg.Dir(), "env.json"), []byte(`{"id":"x","usable":true}`), 0o644)
	if removed, _ := store.GC(); contains(removed, filepath.Base(stg.Dir())) {
		t.Errorf("GC removed a build that is still running")
	}
	stg.lock.Close()
	envs, _ := store.List()
	for _, e := range envs {
		if e.dir == stg.Dir() {
			t.Errorf("a crashed build is listed")
		}
	}
	removed, err := store.GC()
	if err != nil || !contains(removed, filepath.Base(stg.Dir())) {
		t.Errorf("GC() = %v, %v; want it to remove %s", removed, err, filepath.Base(stg.Dir()))
	}
}

// Publish moves a stage into the store; a usable environment already
// there wins over a second build of the same id, unless forced.
func TestPublish(t *testing.T) {
	store := NewStore(t.TempDir())
	build := func(reason string, force bool) *Env {
		stg, err := store.NewStage()
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(stg.LayerDir(), "repo"), 0o755)
		os.WriteFile(filepath.Join(stg.Dir(), BuildLog), []byte(reason), 0o644)
		e := stg.Env()
		e.ID, e.Usable, e.Reason = "e1", reason == "", reason
		if err := stg.Publish(force); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(stg.Dir()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the stage %s is still there after Publish", stg.Dir())
		}
		return e
	}
	if e := build("broken", false); store.Get("e1").Usable || e.BuildLog != filepath.Join(store.Dir(), "e1", BuildLog) {
		t.Fatalf("first build: stored %+v", store.Get("e1"))
	}
	build("", false) // replaces the unusable one
	if !store.Get("e1").Usable {
		t.Errorf("a usable build did not replace an unusable one")
	}
	build("worse", false) // loses to the usable one
	if !store.Get("e1").Usable {
		t.Errorf("a second build replaced a usable environment without force")
	}
	build("forced", true)
	if store.Get("e1").Reason != "forced" {
		t.Errorf("a forced build did not replace the environment")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
