package sandboxcmd

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"cwm/internal/base"
	"cwm/internal/command"
	"cwm/internal/sandbox"
)

// sandboxFlags are the flags shared by the sandbox commands.
type sandboxFlags struct {
	layers  command.StringList
	base    string
	workdir string
	timeout time.Duration
	cpu     time.Duration
	memory  command.ByteSize
	pids    int64
	fsize   command.ByteSize
	output  command.ByteSize
	disk    command.ByteSize
	env     command.StringList
}

func (f *sandboxFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.layers, "layer", "read-only `DIR` stacked over the base (repeatable; first is topmost)")
	fs.StringVar(&f.base, "base", "", "the base instead of the host's /usr and /etc: a stored base's `DIGEST` (or a prefix; cwm base ls), or a root filesystem directory")
	fs.StringVar(&f.workdir, "workdir", "", "working `DIR` inside the sandbox (default: the base's WorkingDir, or /)")
	fs.DurationVar(&f.timeout, "timeout", sandbox.DefaultLimits.Timeout, "wall-clock limit of the command")
	fs.DurationVar(&f.cpu, "cpu", sandbox.DefaultLimits.CPU, "CPU time limit per process")
	f.memory = command.ByteSize(sandbox.DefaultLimits.Memory)
	fs.Var(&f.memory, "memory", "memory limit of the sandbox in `BYTES` (suffixes K, M, G)")
	fs.Int64Var(&f.pids, "pids", sandbox.DefaultLimits.Pids, "process limit of the sandbox")
	f.fsize = command.ByteSize(sandbox.DefaultLimits.FileSize)
	fs.Var(&f.fsize, "file-size", "largest file a process may write, in `BYTES`")
	f.output = command.ByteSize(sandbox.DefaultLimits.Output)
	fs.Var(&f.output, "output", "`BYTES` the command may write to stdout and stderr before it is killed")
	f.disk = command.ByteSize(sandbox.DefaultLimits.Disk)
	fs.Var(&f.disk, "disk", "`BYTES` the sandbox may write to its file system (counted against --memory too)")
	fs.Var(&f.env, "env", "`K=V` added to the environment (repeatable)")
}

// config is the sandbox's configuration; home is $CWM_HOME, whose store
// holds the bases --base may name.
func (f *sandboxFlags) config(home string) (sandbox.Config, error) {
	for _, kv := range f.env {
		if !strings.Contains(kv, "=") || strings.HasPrefix(kv, "=") {
			return sandbox.Config{}, command.Usagef("--env %q: want K=V", kv)
		}
	}
	if f.timeout <= 0 {
		return sandbox.Config{}, command.Usagef("--timeout %v: must be positive", f.timeout)
	}
	if f.cpu <= 0 {
		return sandbox.Config{}, command.Usagef("--cpu %v: must be positive", f.cpu)
	}
	if f.pids <= 0 {
		return sandbox.Config{}, command.Usagef("--pids %d: must be positive", f.pids)
	}
	if f.memory <= 0 {
		return sandbox.Config{}, command.Usagef("--memory %d: must be positive", f.memory)
	}
	if f.fsize <= 0 || f.output <= 0 || f.disk <= 0 {
		return sandbox.Config{}, command.Usagef("--file-size, --output and --disk must be positive")
	}
	cfg := sandbox.Config{Base: f.base, Workdir: f.workdir, Env: f.env}
	if fi, err := os.Stat(f.base); f.base != "" && (err != nil || !fi.IsDir()) {
		b, err := base.NewStore(home).Resolve(f.base)
		if err != nil {
			return sandbox.Config{}, fmt.Errorf("--base: %w", err)
		}
		cfg = b.SandboxConfig()
		cfg.Env = b.SandboxEnv(f.env)
		if f.workdir != "" {
			cfg.Workdir = f.workdir
		}
	}
	return sandbox.Config{
		Base: cfg.Base, Layers: f.layers, Workdir: cfg.Workdir, Env: cfg.Env,
		Limits: sandbox.Limits{Timeout: f.timeout, CPU: f.cpu, Memory: int64(f.memory), Pids: f.pids,
			FileSize: int64(f.fsize), Output: int64(f.output), Disk: int64(f.disk)},
	}, nil
}
