package agent

import (
	"context"
	"testing"
	"time"

	"cwm/internal/env"
	"cwm/internal/env/envtest"
	"cwm/internal/episode/episodetest"
	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/sandbox"
	"cwm/internal/task"
	"cwm/internal/trajectory"
)

// harness is a runtime, a fake model server and a runner over them.
type harness struct {
	rt     *sandbox.Runtime
	server *modeltest.Server
	runner *Runner
	env    *env.Env
	layer  string // the host directory of env's layer, to compare with
	task   *task.Task
}

func newHarness(t testing.TB, script modeltest.Script, proto string, l Limits) *harness {
	t.Helper()
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	srv, err := modeltest.Start(script, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	client, err := model.NewClient(model.ClientConfig{BaseURL: srv.URL, Model: "fake-model", APIKey: "test-key",
		Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxRetries: 3, PriceInput: 1, PriceOutput: 2})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProtocol(proto, "")
	if err != nil {
		t.Fatal(err)
	}
	layer, tk := episodetest.CalcRepo(t)
	e := envtest.Put(t, t.TempDir(), tk.EnvID, layer)
	return &harness{rt: rt, server: srv, env: e, layer: e.LayerDir(), task: tk,
		runner: &Runner{Sandboxes: env.NewSandboxes(rt), Client: client, Protocol: p, Limits: l}}
}

func (h *harness) episode() Attempt {
	return Attempt{Task: h.task, Env: h.env}
}

func (h *harness) run(t testing.TB) *trajectory.Trajectory {
	t.Helper()
	tr, err := h.runner.Run(context.Background(), h.episode())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return tr
}
