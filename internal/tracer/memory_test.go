package tracer

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"cwm/internal/testtime"
)

// TestMemoryStatus runs functions whose processes need far more memory
// than a worker with a 64 MiB address space (a 576 MiB sandbox) has: the
// memory cgroup's OOM killer ends one of them, and the result says memory,
// not the timeout or death the server saw. Running past the address space
// in the program itself is a MemoryError in the trace, as before. After
// each, the pool still traces.
func TestMemoryStatus(t *testing.T) {
	rt := testRuntime(t)
	if v, why := rt.Cgroups(); v == 0 {
		t.Skipf("no memory cgroup: %s", why)
	}
	// The wall clock must outlast forty forks on a loaded machine (and
	// under emulation, CWM_TEST_TIME_SCALE): a timeout before the cgroup
	// fills is a timeout, rightly.
	timeout := testtime.Scale(10 * time.Second)
	p, err := NewPool(context.Background(), rt, Options{Workers: 1, Timeout: timeout, Memory: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cases := []struct {
		name, code, call string
		status           Status
		output           string
	}{
		// Forty children of 20 MiB each, waited for: those the killer
		// spares sleep past the wall clock, which runs out while the
		// program waits for them.
		{"forked children", `import os, time

def f(k, n):
    pids = []
    for i in range(k):
        pid = os.fork()
        if pid == 0:
            try:
                x = bytearray(n)
                x[::4096] = b"x" * len(x[::4096])
                time.sleep(` + strconv.Itoa(int(3*timeout/time.Second)) + `)
            finally:
                os._exit(0)
        pids.append(pid)
    return [os.waitpid(p, 0)[1] for p in pids]
`, "f(40, 20 * 2**20)", Memory, ""},
		// Files in a tmpfs are memory of the cgroup, in no process's
		// address space: the killer ends the runner or the server.
		{"tmpfs files", `def f(k, n):
    for i in range(k):
        with open("/dev/shm/f%d" % i, "wb") as fh:
            fh.write(bytes(n))
    return k
`, "f(40, 20 * 2**20)", Memory, ""},
		{"address space", "def f(n):\n    x = bytearray(n)\n    return len(x)\n", "f(2**30)", Exception, "MemoryError()"},
	}
	for _, c := range cases {
		r := p.Trace(context.Background(), Func{ID: c.name, Code: c.code, Call: c.call})
		if r.Status != c.status || r.Output != c.output || c.status == Memory && !strings.Contains(r.Error, "memory limit of 576 MiB") {
			t.Errorf("%s: status %s, output %q (%s); want %s, output %q", c.name, r.Status, r.Output, r.Error, c.status, c.output)
		}
		if r := p.Trace(context.Background(), Func{ID: "after", Code: paperCode, Call: "f(1,3)"}); r.Text != paperText() {
			t.Errorf("after %s: %s %q, want the paper's trace", c.name, r.Status, r.Error)
		}
	}
}
