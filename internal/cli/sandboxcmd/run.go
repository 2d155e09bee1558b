package sandboxcmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"

	"cwm/internal/command"
	"cwm/internal/sandbox"
)

type runCmd struct {
	sandboxFlags
	shell bool
	json  bool
}

func (*runCmd) Name() string { return "sandbox run" }
func (*runCmd) Synopsis() string {
	return "run one command in a fresh sandbox"
}
func (*runCmd) Usage() string {
	return `[flags] -- CMD [ARG...]
Runs CMD in a new sandbox (user, mount, pid, ipc, uts and network namespaces;
overlay root over read-only layers; memory, process, CPU and time limits),
streams its output, and exits with its status (128+N if signal N killed it).
When a limit stops the command, cwm says which on stderr.

With --shell, the arguments are joined and run by bash -c.

Examples:
  cwm sandbox run -- python3 -c 'print(1+1)'
  cwm sandbox run --timeout 2s --memory 256M --shell -- 'yes | head -c 1G | wc -c'
  cwm sandbox run --layer ./mylayer --workdir /repo -- python3 -m pytest -q
  cwm sandbox run --base 35f1775a -- python3 --version   # a stored base (cwm base ls)`
}

func (c *runCmd) Flags(fs *flag.FlagSet) {
	c.sandboxFlags.register(fs)
	fs.BoolVar(&c.shell, "shell", false, "run the arguments as one bash command line")
	fs.BoolVar(&c.json, "json", false, "after the command, print its result as JSON on stderr")
}

// Verbatim: the arguments from CMD on are CMD's, flags among them too
// ("sandbox run python3 -c ..."), whether or not "--" comes before it.
func (*runCmd) Verbatim() {}

func (c *runCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) == 0 {
		return command.Usagef("no command given")
	}
	cfg, err := c.config(e.Home)
	if err != nil {
		return err
	}
	rt, err := openRuntime(e)
	if err != nil {
		return err
	}
	defer rt.Close()
	cmd := sandbox.Cmd{Args: args, Stdout: e.Stdout, Stderr: e.Stderr, Capture: 4096}
	if c.shell {
		cmd = sandbox.Cmd{Shell: strings.Join(args, " "), Stdout: e.Stdout, Stderr: e.Stderr, Capture: 4096}
	}
	cmd.Stdin = e.Stdin // an *os.File is passed to the command as it is
	// One command, so a one-shot sandbox: no sandbox init to start.
	r, err := rt.Run(ctx, cfg, cmd)
	if err != nil {
		var ce *sandbox.ConfigError
		switch {
		case errors.Is(err, sandbox.ErrEmptyCommand):
			return command.Usagef("empty command")
		case errors.As(err, &ce):
			return startErr(err)
		}
		if strings.Contains(err.Error(), "command not found") {
			fmt.Fprintf(e.Stderr, "cwm sandbox run: %v\n", err)
			return command.ExitStatus(127)
		}
		return err
	}
	if c.json {
		json.NewEncoder(e.Stderr).Encode(resultJSON(r))
	}
	if r.Reason != sandbox.ReasonNone {
		fmt.Fprintf(e.Stderr, "cwm sandbox run: command stopped after %v: %s\n", r.Duration.Round(1e6), r.Describe())
	}
	return command.ExitStatus(StatusOf(r))
}

func resultJSON(r sandbox.Result) map[string]any {
	return map[string]any{
		"exit_code": r.ExitCode, "signal": int(r.Signal), "reason": string(r.Reason),
		"seconds": r.Duration.Seconds(), "cpu_seconds": r.CPU.Seconds(), "max_rss": r.MaxRSS,
		"stdout_bytes": r.StdoutBytes, "stderr_bytes": r.StderrBytes,
	}
}
