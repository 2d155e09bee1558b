package tracer

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"

	"cwm/internal/sandbox"
)

// One runtime and one pool serve every test and benchmark of the package:
// starting workers costs more than most tests.
var shared struct {
	once sync.Once
	home string
	rt   *sandbox.Runtime
	pool *Pool
	err  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if shared.pool != nil {
		shared.pool.Close()
	}
	if shared.rt != nil {
		shared.rt.Close()
	}
	if shared.home != "" {
		os.RemoveAll(shared.home)
	}
	os.Exit(code)
}

// testRuntime returns the package's sandbox runtime.
func testRuntime(tb testing.TB) *sandbox.Runtime {
	tb.Helper()
	testPool(tb)
	return shared.rt
}

// testPool returns the shared pool: 2 workers (the machine has 2 cores),
// default limits but a 10s timeout so that a slow CI machine does not turn
// an ordinary function into a timeout.
func testPool(tb testing.TB) *Pool {
	tb.Helper()
	shared.once.Do(func() {
		shared.home, shared.err = os.MkdirTemp("", "cwm-tracer-test-")
		if shared.err != nil {
			return
		}
		shared.rt, shared.err = sandbox.NewRuntime(sandbox.Options{Home: shared.home})
		if shared.err != nil {
			shared.err = fmt.Errorf("sandbox runtime: %w", shared.err)
			return
		}
		shared.pool, shared.err = NewPool(context.Background(), shared.rt, Options{Workers: 2, Timeout: 10e9})
	})
	if shared.err != nil {
		tb.Fatalf("trace pool: %v", shared.err)
	}
	return shared.pool
}
