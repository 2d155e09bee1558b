package env

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMigrateV1Layer: a version 1 environment (from before sandboxes ran
// as their own block of host ids) is migrated on first use: files of the
// sandbox's other users get their sandbox ids back, root's stay, and the
// manifest says version 2.
func TestMigrateV1Layer(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("version 1 layers had such files only as root")
	}
	home := t.TempDir()
	st := NewStore(home)
	dir := filepath.Join(st.Dir(), "e1")
	layer := filepath.Join(dir, "layer", "repo")
	os.MkdirAll(layer, 0o755)
	for name, uid := range map[string]int{"roots": 0, "users": 101000} {
		p := filepath.Join(layer, name)
		os.WriteFile(p, []byte("x"), 0o644)
		os.Lchown(p, uid, uid)
	}
	os.Symlink("users", filepath.Join(layer, "link"))
	os.Lchown(filepath.Join(layer, "link"), 100005, 100005)
	b, _ := json.Marshal(map[string]any{"version": 1, "id": "e1", "name": "old", "usable": true})
	os.WriteFile(filepath.Join(dir, "env.json"), b, 0o644)

	e := st.Get("e1")
	if e == nil || e.Version != ManifestVersion {
		t.Fatalf("Get(e1) = %+v, want a migrated environment", e)
	}
	for name, want := range map[string]uint32{"roots": 0, "users": 1000, "link": 5} {
		var s unix.Stat_t
		if err := unix.Lstat(filepath.Join(layer, name), &s); err != nil || s.Uid != want || s.Gid != want {
			t.Errorf("%s owned by %d:%d after migration (%v), want %d", name, s.Uid, s.Gid, err, want)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, "env.json"))
	var m struct{ Version int }
	if json.Unmarshal(data, &m); m.Version != ManifestVersion {
		t.Errorf("env.json says version %d after migration, want %d", m.Version, ManifestVersion)
	}
}
