package tracer

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestWorkerRestart kills a worker's server from outside, as an OOM killer
// or a crash would: the next function is traced by a restarted server.
func TestWorkerRestart(t *testing.T) {
	p, err := NewPool(context.Background(), testRuntime(t), Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	w := p.all[0]
	w.proc.Kill()
	<-w.exit
	w.exit <- exitState{} // put it back for stop to read
	f := Func{ID: "after-kill", Code: paperCode, Call: "f(1,3)"}
	r := p.Trace(context.Background(), f)
	if r.Status != Error || !strings.Contains(r.Error, "trace worker failed") {
		// The kill may also be seen before the request is sent, in which
		// case the pool restarts the worker and traces at once.
		if r.Status != OK {
			t.Fatalf("first trace after the kill: %s %q", r.Status, r.Error)
		}
	}
	if r := p.Trace(context.Background(), f); r.Text != paperText() {
		t.Fatalf("trace after restart: %s %q", r.Status, r.Error)
	}
	if w.gen != 2 {
		t.Errorf("worker started %d times, want 2", w.gen)
	}
}

// TestShortLivedContexts traces with a per-call context that is cancelled
// right after each call, as a caller with per-function deadlines does: the
// worker (re)started under such a context must survive it.
func TestShortLivedContexts(t *testing.T) {
	p, err := NewPool(context.Background(), testRuntime(t), Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	w := p.all[0]
	w.stop() // the next call restarts it under its own context
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r := p.Trace(ctx, Func{ID: "short", Code: paperCode, Call: "f(1,3)"})
		cancel()
		if r.Status != OK {
			t.Fatalf("call %d: %s %q", i, r.Status, r.Error)
		}
		time.Sleep(50 * time.Millisecond) // let a wrongly bound kill land
	}
	if w.gen != 2 {
		t.Errorf("worker started %d times, want 2 (once, once more after stop)", w.gen)
	}
}
