// Package sandboxcmd holds the sandbox commands of cwm's command line,
// 'cwm sandbox run' and 'cwm sandbox shell', and their fast path: the
// package's initialiser runs them before the heavy packages of the binary
// initialise (see fastpath.go). Its imports must therefore stay light.
package sandboxcmd

import (
	"context"
	"errors"
	"fmt"

	"cwm/internal/command"
	"cwm/internal/sandbox"
)

// Commands holds the constructors of the sandbox commands.
var Commands = []func() command.Command{
	func() command.Command { return &runCmd{} },
	func() command.Command { return &shellCmd{} },
}

// openSandbox starts a runtime and one sandbox; close releases both.
func openSandbox(ctx context.Context, e *command.Env, cfg sandbox.Config) (*sandbox.Sandbox, func(), error) {
	rt, err := openRuntime(e)
	if err != nil {
		return nil, nil, err
	}
	s, err := rt.New(ctx, cfg)
	if err != nil {
		rt.Close()
		return nil, nil, startErr(err)
	}
	return s, func() { s.Close(); rt.Close() }, nil
}

// openRuntime starts a runtime that keeps no sandbox warm: the command
// uses one and exits.
func openRuntime(e *command.Env) (*sandbox.Runtime, error) {
	return sandbox.NewRuntime(sandbox.Options{Home: e.Home, Log: e.Log, Warm: -1})
}

// startErr turns a configuration the sandbox refused into a usage error.
func startErr(err error) error {
	var ce *sandbox.ConfigError
	if errors.As(err, &ce) {
		return command.UsageError(ce.Error())
	}
	return fmt.Errorf("start sandbox: %w", err)
}

// StatusOf maps a command's result to the exit status cwm exits with:
// the command's own, or 128+N for signal N, as shells do.
func StatusOf(r sandbox.Result) int {
	if r.Signal != 0 {
		return 128 + int(r.Signal)
	}
	return r.ExitCode
}
