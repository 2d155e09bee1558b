package basebuild

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAddHostsKeepsTimes: the /etc/hosts a Debian tree is given has the
// epoch's time and leaves /etc's as the archive made it, so that two
// builds of the same packages pack into the same layer (before, /etc got
// the build's time and every build its own digest).
func TestAddHostsKeepsTimes(t *testing.T) {
	root := t.TempDir()
	etc := filepath.Join(root, "etc")
	os.Mkdir(etc, 0o755)
	old := time.Unix(1700000000, 0)
	os.Chtimes(etc, old, old)
	if err := addHosts(root); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(etc); !fi.ModTime().Equal(old) {
		t.Errorf("addHosts changed /etc's time to %v, want %v", fi.ModTime(), old)
	}
	fi, err := os.Stat(filepath.Join(etc, "hosts"))
	if err != nil || !fi.ModTime().Equal(time.Unix(debianEpoch, 0)) {
		t.Errorf("/etc/hosts: %v, %v; want it at the epoch", fi, err)
	}
	// A tree that has its own is left alone.
	os.WriteFile(filepath.Join(etc, "hosts"), []byte("mine\n"), 0o644)
	if err := addHosts(root); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(etc, "hosts")); string(data) != "mine\n" {
		t.Errorf("addHosts replaced the tree's own /etc/hosts with %q", data)
	}
}
