package sandbox

import (
	"context"
	"testing"
)

func TestSmoke(t *testing.T) {
	rt, err := NewRuntime(Options{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	s, err := rt.New(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Exec(ctx, Cmd{Shell: "echo hi; id; hostname; ls /; cat /proc/self/status | grep -i cap; echo err >&2; ip addr 2>&1 | head; exit 3"})
	t.Logf("%+v %v", r, err)
	t.Logf("stdout=%s stderr=%s", r.Stdout, r.Stderr)
}
