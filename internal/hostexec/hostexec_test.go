package hostexec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cwm/internal/errkind"
)

func TestOutput(t *testing.T) {
	ctx := context.Background()
	out, err := Output(ctx, Cmd{Args: []string{"sh", "-c", "echo $X; pwd"}, Env: []string{"X=hello"}, Dir: "/tmp"})
	if err != nil || string(out) != "hello\n/tmp\n" {
		t.Errorf("Output(echo) = %q, %v; want hello and /tmp", out, err)
	}
	_, err = Output(ctx, Cmd{Args: []string{"sh", "-c", "echo first >&2; echo why it failed >&2; exit 3"}})
	if err == nil || !strings.HasSuffix(err.Error(), ": why it failed") {
		t.Errorf("Output(exit 3) error = %v, want the last line of stderr", err)
	}
	_, err = Output(ctx, Cmd{Args: []string{"sh", "-c", "head -c 2000 /dev/zero"}, Capture: 1000})
	if !errkind.Is(err, errkind.Limit) {
		t.Errorf("Output(2000 bytes, capture 1000) error = %v, want a limit", err)
	}
	if _, err := Output(ctx, Cmd{Args: []string{"/no/such/program"}}); err == nil {
		t.Error("Output(/no/such/program) succeeded")
	}
}

// A command past its deadline is killed with its whole process group,
// grandchildren included, and Output returns soon after.
func TestTimeoutKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	start := time.Now()
	_, err := Output(context.Background(), Cmd{
		Args:    []string{"sh", "-c", `sleep 60 & echo $! > "$1"; wait`, "sh", pidFile},
		Timeout: 300 * time.Millisecond,
	})
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Output(sleep 60) error = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Output returned after %v", d)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &pid); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Errorf("the grandchild %d outlived the deadline", pid)
	}
}
