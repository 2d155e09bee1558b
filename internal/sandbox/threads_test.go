package sandbox

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// osThreads is how many threads this process has.
func osThreads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if n, ok := strings.CutPrefix(line, "Threads:"); ok {
			v, _ := strconv.Atoi(strings.TrimSpace(n))
			return v
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// TestOpenSandboxesHoldNoThread: a sandbox held open does not hold an OS
// thread of cwm waiting for its init to exit (init is reaped once its
// socket, on the poller, closes), so 60 open sandboxes add far fewer
// than 60 threads; and a sandbox whose init is killed is still seen to
// die.
func TestOpenSandboxesHoldNoThread(t *testing.T) {
	rt := newRuntime(t, Options{})
	sh(t, newSandbox(t, rt, Config{}), "true") // the runtime's own threads
	before := osThreads(t)
	const n = 60
	var boxes []*Sandbox
	for range n {
		s := newSandbox(t, rt, Config{})
		sh(t, s, "true")
		boxes = append(boxes, s)
	}
	// Starting sandboxes one at a time blocks in a few syscalls at once:
	// a handful of threads, not one a sandbox.
	if grew := osThreads(t) - before; grew >= n/2 {
		t.Errorf("%d open sandboxes added %d threads, want far fewer than one each", n, grew)
	}
	s := boxes[0]
	if err := unixKill(s.init.Process.Pid); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.dead:
	case <-time.After(2 * time.Minute):
		t.Fatal("a killed init was not seen to die in 2 minutes")
	}
}

func unixKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
