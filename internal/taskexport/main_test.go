package taskexport

import (
	"context"
	"testing"

	"cwm/internal/env"
	"cwm/internal/sandbox"
	"cwm/internal/sandbox/sandboxtest"
	"cwm/internal/task"
	"cwm/internal/tasks"
)

// The tests share one runtime and one $CWM_HOME.
var (
	testSandboxes *env.Sandboxes
	testRuntime   *sandbox.Runtime
	testHome      string
)

func TestMain(m *testing.M) {
	sandboxtest.Main(m, "taskexport", func(rt *sandbox.Runtime, home string) {
		testSandboxes, testRuntime, testHome = env.NewSandboxes(rt), rt, home
	})
}

// textkitTasks builds the example repository's environment on the
// Debian bookworm test base (so that it has an image) and makes up to
// max mutate-fix tasks of it, one per function.
func textkitTasks(t *testing.T, max int) (*env.Env, []task.Task) {
	t.Helper()
	ctx := context.Background()
	e := bookwormTextkit(t)
	out := t.TempDir() + "/tasks.jsonl"
	if _, err := tasks.Mutate(ctx, testSandboxes, e, tasks.MutateOptions{Out: out, Max: max, PerFunction: 1, Seed: 1,
		Workers: 2, TimeoutFactor: 3}); err != nil {
		t.Fatalf("Mutate: %v", err)
	}
	ts, err := task.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) == 0 {
		t.Fatal("Mutate wrote no tasks")
	}
	return env.NewStore(testHome).Get(e.ID), ts
}
