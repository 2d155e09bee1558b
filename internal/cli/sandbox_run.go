package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"

	"cwm/internal/sandbox"
)

type sandboxRunCmd struct {
	sandboxFlags
	shell bool
	json  bool
}

func (*sandboxRunCmd) name() string { return "sandbox run" }
func (*sandboxRunCmd) synopsis() string {
	return "run one command in a fresh sandbox"
}
func (*sandboxRunCmd) usage() string {
	return `[flags] -- CMD [ARG...]
Runs CMD in a new sandbox (user, mount, pid, ipc, uts and network namespaces;
overlay root over read-only layers; memory, process, CPU and time limits),
streams its output, and exits with its status (128+N if signal N killed it).
When a limit stops the command, cwm says which on stderr.

With --shell, the arguments are joined and run by bash -c.

Examples:
  cwm sandbox run -- python3 -c 'print(1+1)'
  cwm sandbox run --timeout 2s --memory 256M --shell -- 'yes | head -c 1G | wc -c'
  cwm sandbox run --layer ./mylayer --workdir /repo -- python3 -m pytest -q`
}

func (c *sandboxRunCmd) flags(fs *flag.FlagSet) {
	c.sandboxFlags.register(fs)
	fs.BoolVar(&c.shell, "shell", false, "run the arguments as one bash command line")
	fs.BoolVar(&c.json, "json", false, "after the command, print its result as JSON on stderr")
}

func (c *sandboxRunCmd) run(ctx context.Context, e *Env, args []string) error {
	if len(args) == 0 {
		return usagef("no command given")
	}
	cfg, err := c.config()
	if err != nil {
		return err
	}
	s, done, err := openSandbox(ctx, e, cfg)
	if err != nil {
		return err
	}
	defer done()
	cmd := sandbox.Cmd{Args: args, Stdout: e.Stdout, Stderr: e.Stderr, Capture: 4096}
	if c.shell {
		cmd = sandbox.Cmd{Shell: strings.Join(args, " "), Stdout: e.Stdout, Stderr: e.Stderr, Capture: 4096}
	}
	cmd.Stdin = e.Stdin // an *os.File is passed to the command as it is
	r, err := s.Exec(ctx, cmd)
	if err != nil {
		if errors.Is(err, sandbox.ErrEmptyCommand) {
			return usagef("empty command")
		}
		if strings.Contains(err.Error(), "command not found") {
			fmt.Fprintf(e.Stderr, "cwm sandbox run: %v\n", err)
			return exitStatus(127)
		}
		return err
	}
	if c.json {
		json.NewEncoder(e.Stderr).Encode(resultJSON(r))
	}
	if r.Reason != sandbox.ReasonNone {
		fmt.Fprintf(e.Stderr, "cwm sandbox run: command stopped after %v: %s\n", r.Duration.Round(1e6), r.Describe())
	}
	return exitStatus(statusOf(r))
}

func resultJSON(r sandbox.Result) map[string]any {
	return map[string]any{
		"exit_code": r.ExitCode, "signal": int(r.Signal), "reason": string(r.Reason),
		"seconds": r.Duration.Seconds(), "cpu_seconds": r.CPU.Seconds(), "max_rss": r.MaxRSS,
		"stdout_bytes": r.StdoutBytes, "stderr_bytes": r.StderrBytes,
	}
}
