package sandbox

import (
	"context"
	"testing"
)

// idleCount is how many warm sandboxes rt holds for cfg.
func idleCount(rt *Runtime, cfg Config) int {
	cfg, _ = cfg.normalize()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return len(rt.idle[cfg.key()])
}

// Prewarm fills an empty pool with a new sandbox that New then takes, and
// leaves a pool that already holds one alone: it never takes the idle
// sandbox itself (as New then Close would, for nothing).
func TestPrewarm(t *testing.T) {
	rt := newRuntime(t, Options{})
	ctx := context.Background()
	cfg := Config{Workdir: "/tmp"}
	if err := rt.Prewarm(ctx, cfg, 1); err != nil {
		t.Fatal(err)
	}
	if n := idleCount(rt, cfg); n != 1 {
		t.Fatalf("after Prewarm on an empty pool: %d idle, want 1", n)
	}
	rt.mu.Lock()
	var warm *Sandbox
	for _, l := range rt.idle {
		warm = l[0]
	}
	rt.mu.Unlock()
	if err := rt.Prewarm(ctx, cfg, 1); err != nil {
		t.Fatal(err)
	}
	if n := idleCount(rt, cfg); n != 1 {
		t.Fatalf("after Prewarm on a pool holding one: %d idle, want still 1", n)
	}
	s := newSandbox(t, rt, cfg)
	if s != warm {
		t.Errorf("New started a sandbox instead of taking the prewarmed one")
	}
	if r, err := s.Exec(ctx, Cmd{Shell: "echo ok"}); err != nil || r.ExitCode != 0 || string(r.Stdout) != "ok\n" {
		t.Errorf("the prewarmed sandbox runs: %+v, %v", r, err)
	}
	if n := idleCount(rt, cfg); n != 0 {
		t.Errorf("after New: %d idle, want 0", n)
	}
	if err := rt.Prewarm(ctx, cfg, 2); err != nil {
		t.Fatal(err)
	}
	if n := idleCount(rt, cfg); n != 1 {
		t.Errorf("Prewarm(want 2) on an empty pool: %d idle, want the one it started", n)
	}
	off := newRuntime(t, Options{Warm: -1})
	if err := off.Prewarm(ctx, cfg, 1); err != nil || idleCount(off, cfg) != 0 {
		t.Errorf("Prewarm with the pool off: %v, %d idle; want nothing", err, idleCount(off, cfg))
	}
}
