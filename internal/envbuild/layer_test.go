package envbuild

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMergeUpperKeepsTimes: a file merged into the layer keeps its
// modification time, which Python's bytecode caches are keyed by.
func TestMergeUpperKeepsTimes(t *testing.T) {
	upper, layer := t.TempDir(), t.TempDir()
	src := filepath.Join(upper, "venv", "lib", "m.py")
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, []byte("x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := os.Chtimes(src, when, when); err != nil {
		t.Fatal(err)
	}
	if err := mergeUpper(upper, layer, nil); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(layer, "venv", "lib", "m.py"))
	if err != nil {
		t.Fatal(err)
	}
	if !st.ModTime().Equal(when) {
		t.Errorf("mergeUpper: the layer's m.py is modified %v, want %v", st.ModTime().UTC(), when)
	}
}
