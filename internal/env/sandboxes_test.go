package env

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestConfigOnStoredBase: an environment whose base is a digest starts on
// that base's root filesystem, with the image's Env under its own (the
// venv first on PATH, the image's PATH after); a digest the store lacks
// is an error naming it.
func TestConfigOnStoredBase(t *testing.T) {
	home := t.TempDir()
	hex := strings.Repeat("ab", 32)
	dir := filepath.Join(home, "bases", hex)
	os.MkdirAll(filepath.Join(dir, "rootfs"), 0o755)
	os.WriteFile(filepath.Join(dir, "base.json"), []byte(`{"digest": "sha256:`+hex+`", "env": ["PATH=/opt/py/bin:/usr/bin", "LANG=C.UTF-8"]}`), 0o644)
	e := &Env{Base: "sha256:" + hex, dir: filepath.Join(home, "envs", "x"), building: true}
	cfg, err := config(e, RunLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Base != filepath.Join(dir, "rootfs") {
		t.Errorf("config(%s).Base = %s, want the base's rootfs", e.Base, cfg.Base)
	}
	var path []string
	for _, kv := range cfg.Env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = strings.Split(p, ":")
		}
	}
	want := []string{VenvRoot + "/bin", "/opt/py/bin", "/usr/bin"}
	if diff := cmp.Diff(want, path); diff != "" {
		t.Errorf("config(%s) PATH (-want +got):\n%s", e.Base, diff)
	}
	if !strings.Contains(strings.Join(cfg.Env, " "), "LANG=C.UTF-8") {
		t.Errorf("config(%s).Env = %v, want the image's LANG", e.Base, cfg.Env)
	}
	e.Base = "sha256:" + strings.Repeat("cd", 32)
	if _, err := config(e, RunLimits{}); err == nil || !strings.Contains(err.Error(), "is built on base cdcdcdcdcdcd, which is not in") {
		t.Errorf("config on a missing base = %v, want it named", err)
	}
}
