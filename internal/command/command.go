// Package command is the framework of cwm's command line: the Command
// interface a subcommand implements, the Env it runs in, the exit status of
// each kind of error (cwm/internal/errkind), the dispatcher that finds a command by name, parses its
// flags and runs it, and the flag types commands share.
//
// The package imports only light standard packages (no regexp, net or
// encoding): a fast path that starts from a package initialiser, before the
// heavy parts of the binary initialise, dispatches with it (see
// cwm/internal/cli/sandboxcmd).
package command

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"cwm/internal/errkind"
)

// Command is one subcommand. Implementations bind their flags to their own
// fields in Flags and do their work in Run.
type Command interface {
	// Name is the full command name, e.g. "sandbox run".
	Name() string
	// Synopsis is one line for the command list.
	Synopsis() string
	// Usage is the argument synopsis line followed by a longer description.
	Usage() string
	// Flags registers the command's flags.
	Flags(fs *flag.FlagSet)
	// Run does the command's work with the arguments left after its flags.
	Run(ctx context.Context, e *Env, args []string) error
}

// Env is what a command may touch of the outside world. Commands never use
// os.Stdout and friends directly, so tests can run them in-process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Log    *slog.Logger
	// Home is $CWM_HOME (default ~/.cache/cwm): environments, run state.
	Home string
}

// NewEnv returns the Env cwm's commands run in: the given standard streams,
// DefaultHome, and a logger on stderr at Warn level, or Debug when
// $CWM_DEBUG is set.
func NewEnv(stdin io.Reader, stdout, stderr io.Writer) *Env {
	level := slog.LevelWarn
	if os.Getenv("CWM_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return &Env{
		Stdin: stdin, Stdout: stdout, Stderr: stderr, Home: DefaultHome(),
		Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	}
}

// DefaultHome is $CWM_HOME, or cwm's directory in the user's cache
// directory (the temporary directory if there is none).
func DefaultHome() string {
	if h := os.Getenv("CWM_HOME"); h != "" {
		return h
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "cwm")
	}
	return filepath.Join(os.TempDir(), "cwm")
}

// UsageError is a problem with how cwm was invoked, an error of kind
// errkind.Usage: the dispatcher prints it with the command's help and exits
// 2, as it does for any error of that kind.
type UsageError string

func (e UsageError) Error() string { return string(e) }

// Kind is errkind.Usage.
func (e UsageError) Kind() errkind.Kind { return errkind.Usage }

// Usagef formats a UsageError.
func Usagef(format string, args ...any) error { return UsageError(fmt.Sprintf(format, args...)) }

// ExitStatus carries the exit status of a user's command that cwm ran; the
// dispatcher exits with it without printing anything more.
type ExitStatus int

func (e ExitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
