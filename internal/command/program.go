package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"cwm/internal/errkind"
)

// Program is a command line: its commands and the text of its main help.
type Program struct {
	// Help is printed above the command list by 'cwm help'.
	Help string
	// Footer is printed below the command list.
	Footer string
	// Commands holds a constructor per command; each call returns a fresh
	// value so that no flag state is shared between runs.
	Commands []func() Command
}

// Main runs p with the process's arguments and standard streams, under a
// context cancelled on SIGINT or SIGTERM, and exits with its exit code.
func Main(p *Program) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := p.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Run executes the command named by the longest prefix of args (without
// the program name) in the Env NewEnv returns, and returns the process exit
// code: 0 on success, 1 on failure (with a one-line message), 2 on a usage
// error (with the command's help), or the exit status of a user's command
// that the command ran (ExitStatus).
func (p *Program) Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		p.printHelp(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		p.printHelp(stdout)
		return 0
	case "help":
		return p.runHelp(stdout, stderr, args[1:])
	case "-version", "--version":
		args = []string{"version"}
	}
	cmd, rest := p.lookup(args)
	if cmd == nil {
		if group := p.group(args[0]); len(group) > 0 {
			if len(args) > 1 && (args[1] == "-h" || args[1] == "-help" || args[1] == "--help") {
				printGroupHelp(stdout, args[0], group)
				return 0
			}
			if len(args) > 1 {
				fmt.Fprintf(stderr, "cwm %s: unknown command %q\n\n", args[0], args[1])
			}
			printGroupHelp(stderr, args[0], group)
			return 2
		}
		fmt.Fprintf(stderr, "cwm: unknown command %q\n\n", args[0])
		p.printHelp(stderr)
		return 2
	}
	return Exec(ctx, NewEnv(stdin, stdout, stderr), cmd, rest)
}

// Exec parses cmd's flags from args, runs it in e and returns the exit code
// as Run does.
func Exec(ctx context.Context, e *Env, cmd Command, args []string) int {
	fs := flagSet(cmd)
	args, err := parseArgs(fs, cmd, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printCommandHelp(e.Stdout, cmd, fs)
			return 0
		}
		fmt.Fprintf(e.Stderr, "cwm %s: %v\n\n", cmd.Name(), err)
		printCommandHelp(e.Stderr, cmd, fs)
		return 2
	}
	return exitCode(cmd.Run(ctx, e, args), cmd, fs, e.Stderr)
}

func flagSet(cmd Command) *flag.FlagSet {
	fs := flag.NewFlagSet("cwm "+cmd.Name(), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cmd.Flags(fs)
	return fs
}

func exitCode(err error, cmd Command, fs *flag.FlagSet, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var st ExitStatus
	if errors.As(err, &st) {
		return int(st)
	}
	k := errkind.Of(err)
	fmt.Fprintf(stderr, "cwm %s: %v\n", cmd.Name(), err)
	if k == errkind.Usage {
		fmt.Fprintln(stderr)
		printCommandHelp(stderr, cmd, fs)
	}
	return ExitCode(k)
}

// ExitCode is the exit status of a command that failed with an error of
// kind k: 2 for a wrong call (after the command's help), 1 for every other
// failure. It is the one place kinds become exit statuses.
func ExitCode(k errkind.Kind) int {
	if k == errkind.Usage {
		return 2
	}
	return 1
}

// lookup finds the command named by the longest prefix of args.
func (p *Program) lookup(args []string) (Command, []string) {
	for n := min(2, len(args)); n >= 1; n-- {
		name := strings.Join(args[:n], " ")
		for _, mk := range p.Commands {
			if c := mk(); c.Name() == name {
				return c, args[n:]
			}
		}
	}
	return nil, nil
}

// group returns the commands whose name starts with the word group.
func (p *Program) group(group string) []Command {
	var out []Command
	for _, mk := range p.Commands {
		if c := mk(); strings.HasPrefix(c.Name(), group+" ") {
			out = append(out, c)
		}
	}
	return out
}
