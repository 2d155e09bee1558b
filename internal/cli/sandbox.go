package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"cwm/internal/sandbox"
)

// sandboxFlags are the flags shared by the sandbox commands.
type sandboxFlags struct {
	layers  stringList
	base    string
	workdir string
	timeout time.Duration
	cpu     time.Duration
	memory  byteSize
	pids    int64
	fsize   byteSize
	output  byteSize
	env     stringList
}

func (f *sandboxFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.layers, "layer", "read-only `DIR` stacked over the base (repeatable; first is topmost)")
	fs.StringVar(&f.base, "base", "", "root filesystem `DIR` used as the base instead of the host's /usr and /etc")
	fs.StringVar(&f.workdir, "workdir", "/", "working `DIR` inside the sandbox")
	fs.DurationVar(&f.timeout, "timeout", sandbox.DefaultLimits.Timeout, "wall-clock limit of the command")
	fs.DurationVar(&f.cpu, "cpu", sandbox.DefaultLimits.CPU, "CPU time limit per process")
	f.memory = byteSize(sandbox.DefaultLimits.Memory)
	fs.Var(&f.memory, "memory", "memory limit of the sandbox in `BYTES` (suffixes K, M, G)")
	fs.Int64Var(&f.pids, "pids", sandbox.DefaultLimits.Pids, "process limit of the sandbox")
	f.fsize = byteSize(sandbox.DefaultLimits.FileSize)
	fs.Var(&f.fsize, "file-size", "largest file a process may write, in `BYTES`")
	f.output = byteSize(sandbox.DefaultLimits.Output)
	fs.Var(&f.output, "output", "`BYTES` the command may write to stdout and stderr before it is killed")
	fs.Var(&f.env, "env", "`K=V` added to the environment (repeatable)")
}

func (f *sandboxFlags) config() (sandbox.Config, error) {
	for _, kv := range f.env {
		if !strings.Contains(kv, "=") || strings.HasPrefix(kv, "=") {
			return sandbox.Config{}, usagef("--env %q: want K=V", kv)
		}
	}
	if f.timeout <= 0 {
		return sandbox.Config{}, usagef("--timeout %v: must be positive", f.timeout)
	}
	if f.cpu <= 0 {
		return sandbox.Config{}, usagef("--cpu %v: must be positive", f.cpu)
	}
	if f.pids <= 0 {
		return sandbox.Config{}, usagef("--pids %d: must be positive", f.pids)
	}
	if f.memory <= 0 {
		return sandbox.Config{}, usagef("--memory %d: must be positive", f.memory)
	}
	if f.fsize <= 0 || f.output <= 0 {
		return sandbox.Config{}, usagef("--file-size and --output must be positive")
	}
	return sandbox.Config{
		Base: f.base, Layers: f.layers, Workdir: f.workdir, Env: f.env,
		Limits: sandbox.Limits{Timeout: f.timeout, CPU: f.cpu, Memory: int64(f.memory), Pids: f.pids,
			FileSize: int64(f.fsize), Output: int64(f.output)},
	}, nil
}

// openSandbox starts a runtime and one sandbox; close releases both.
func openSandbox(ctx context.Context, e *Env, cfg sandbox.Config) (*sandbox.Sandbox, func(), error) {
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: e.Home, Log: e.Log, Warm: -1})
	if err != nil {
		return nil, nil, err
	}
	s, err := rt.New(ctx, cfg)
	if err != nil {
		rt.Close()
		var ce *sandbox.ConfigError
		if errors.As(err, &ce) {
			return nil, nil, usageError(ce.Error())
		}
		return nil, nil, fmt.Errorf("start sandbox: %w", err)
	}
	return s, func() { s.Close(); rt.Close() }, nil
}

// statusOf maps a command's result to the exit status cwm exits with:
// the command's own, or 128+N for signal N, as shells do.
func statusOf(r sandbox.Result) int {
	if r.Signal != 0 {
		return 128 + int(r.Signal)
	}
	return r.ExitCode
}
