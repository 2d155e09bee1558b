package cli

import (
	"context"
	"fmt"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/envoci"
	"cwm/internal/sandbox"
)

// resolveEnv finds the environment named by ref: an id, unique id prefix
// or name of the store, a registry reference (pulled on first use) or a
// file cwm env export wrote (imported on first use).
func resolveEnv(ctx context.Context, e *command.Env, ref string) (*env.Env, error) {
	return envoci.Resolve(ctx, env.NewStore(e.Home), ref, envoci.Options{Home: e.Home},
		func(what string, secs float64) { fmt.Fprintf(e.Stderr, "cwm: %s in %.1fs\n", what, secs) })
}

// openSandboxes starts a sandbox runtime for one command, keeping warm
// sandboxes for reuse (0: the runtime's default, -1: none, for commands
// that end soon after their sandboxes do). The caller calls close.
func openSandboxes(e *command.Env, warm int) (sbs *env.Sandboxes, close func(), err error) {
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: e.Home, Log: e.Log, Warm: warm})
	if err != nil {
		return nil, nil, fmt.Errorf("start sandbox runtime: %w", err)
	}
	return env.NewSandboxes(rt), func() { rt.Close() }, nil
}

// openEnvSandbox starts a sandbox on an environment.
func openEnvSandbox(ctx context.Context, e *command.Env, en *env.Env) (*sandbox.Sandbox, func(), error) {
	sbs, closeRT, err := openSandboxes(e, -1)
	if err != nil {
		return nil, nil, err
	}
	s, err := sbs.Open(ctx, en)
	if err != nil {
		closeRT()
		return nil, nil, err
	}
	return s, func() { s.Close(); closeRT() }, nil
}

// humanBytes formats a size for tables: 1.2M, 340K.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
