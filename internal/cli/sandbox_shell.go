package cli

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

	"cwm/internal/sandbox"
)

type sandboxShellCmd struct {
	sandboxFlags
}

func (*sandboxShellCmd) name() string     { return "sandbox shell" }
func (*sandboxShellCmd) synopsis() string { return "open an interactive bash in a fresh sandbox" }
func (*sandboxShellCmd) usage() string {
	return `[flags]
Opens bash in a new sandbox. On a terminal the shell gets a pseudo-terminal
of its own (job control, line editing); otherwise bash reads commands from
stdin. Everything written inside is gone when the shell exits.`
}

func (c *sandboxShellCmd) flags(fs *flag.FlagSet) { c.sandboxFlags.register(fs) }

func (c *sandboxShellCmd) run(ctx context.Context, e *Env, args []string) error {
	if len(args) > 0 {
		return usagef("sandbox shell takes no arguments")
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
	in, isFile := e.Stdin.(*os.File)
	if isFile && term.IsTerminal(int(in.Fd())) {
		return c.interactive(ctx, s, in, e.Stdout)
	}
	cmd := sandbox.Cmd{Args: []string{"/bin/bash"}, Stdin: e.Stdin, Stdout: e.Stdout, Stderr: e.Stderr, Capture: 4096}
	r, err := s.Exec(ctx, cmd)
	if err != nil {
		return err
	}
	return exitStatus(statusOf(r))
}

// interactive runs bash on a new pseudo-terminal and relays the user's
// terminal to it in raw mode.
func (c *sandboxShellCmd) interactive(ctx context.Context, s *sandbox.Sandbox, tty *os.File, out io.Writer) error {
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
	return exitStatus(statusOf(r))
}

// openPTY opens a new pseudo-terminal pair on the host's devpts.
func openPTY() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, err
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	sl, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, sl, nil
}
