package sandboxcmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"cwm/internal/command"
	"cwm/internal/sandbox"
)

type shellCmd struct {
	sandboxFlags
}

func (*shellCmd) Name() string     { return "sandbox shell" }
func (*shellCmd) Synopsis() string { return "open an interactive bash in a fresh sandbox" }
func (*shellCmd) Usage() string {
	return `[flags]
Opens bash in a new sandbox. On a terminal the shell gets a pseudo-terminal
of its own (job control, line editing); otherwise bash reads commands from
stdin. Everything written inside is gone when the shell exits.`
}

func (c *shellCmd) Flags(fs *flag.FlagSet) { c.sandboxFlags.register(fs) }

func (c *shellCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("sandbox shell takes no arguments")
	}
	cfg, err := c.config(e.Home)
	if err != nil {
		return err
	}
	s, done, err := openSandbox(ctx, e, cfg)
	if err != nil {
		return err
	}
	defer done()
	return Shell(ctx, s, e)
}

// Shell runs bash in s and returns its exit status as a
// command.ExitStatus. When e.Stdin is a terminal, bash is interactive on a
// pseudo-terminal of its own; otherwise it reads commands from e.Stdin.
func Shell(ctx context.Context, s *sandbox.Sandbox, e *command.Env) error {
	if in, ok := e.Stdin.(*os.File); ok && term.IsTerminal(int(in.Fd())) {
		return interactive(ctx, s, in, e.Stdout)
	}
	r, err := s.Exec(ctx, sandbox.Cmd{Args: []string{"/bin/bash"}, Stdin: e.Stdin, Stdout: e.Stdout, Stderr: e.Stderr, Capture: 4096})
	if err != nil {
		return err
	}
	return command.ExitStatus(StatusOf(r))
}

// interactive runs bash on a new pseudo-terminal and relays the user's
// terminal to it in raw mode.
func interactive(ctx context.Context, s *sandbox.Sandbox, tty *os.File, out io.Writer) error {
	master, slave, err := openPTY()
	if err != nil {
		return fmt.Errorf("open pseudo-terminal: %w", err)
	}
	defer master.Close()
	resize := func() {
		if w, h, err := term.GetSize(int(tty.Fd())); err == nil {
			unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(h), Col: uint16(w)})
		}
	}
	resize()
	p, err := s.Start(ctx, sandbox.Cmd{Args: []string{"/bin/bash", "-i"}, TTY: slave, Env: []string{"TERM=" + os.Getenv("TERM")}})
	slave.Close()
	if err != nil {
		return err
	}
	old, err := term.MakeRaw(int(tty.Fd()))
	if err == nil {
		defer term.Restore(int(tty.Fd()), old)
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	go func() {
		for range winch {
			resize()
		}
	}()
	go io.Copy(master, tty)
	go io.Copy(out, master)
	r, err := p.Wait()
	if err != nil {
		return err
	}
	return command.ExitStatus(StatusOf(r))
}
