package sandbox

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestInheritedDescriptors: a descriptor cwm inherited without
// close-on-exec (a shell's "exec 9>lock" around it) never reaches a
// sandbox's commands, which would otherwise hold a host file open,
// writable.
func TestInheritedDescriptors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	host := filepath.Join(t.TempDir(), "cwm-inherited-lock")
	fd, err := unix.Open(host, unix.O_RDWR|unix.O_CREAT, 0o600) // no O_CLOEXEC, as a shell leaves it
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	rt, err := NewRuntime(Options{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	s, err := rt.New(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Exec(ctx, Cmd{Args: []string{"sh", "-c", "for f in /proc/self/fd/*; do echo \"$f -> $(readlink $f)\"; done"}, Timeout: time.Minute, Capture: 1 << 16})
	if err != nil || !res.Success() {
		t.Fatalf("list descriptors: %v %s", err, res.Describe())
	}
	if strings.Contains(string(res.Stdout), "cwm-inherited-lock") {
		t.Errorf("a sandboxed command holds the host's file (descriptor %d of cwm):\n%s", fd, res.Stdout)
	}
}
