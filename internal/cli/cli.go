// Package cli implements cwm's command line: one file per subcommand, each a
// struct whose fields hold its flags. Run is the only entry point; it decides
// exit codes in one place (0 success, 1 failure, 2 usage error, or the exit
// status of a user's command that cwm ran on its behalf).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

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

// command is one subcommand. Implementations bind their flags to their own
// fields in flags and do their work in run.
type command interface {
	// name is the full command name, e.g. "sandbox run".
	name() string
	// synopsis is one line for the command list.
	synopsis() string
	// usage is the argument synopsis line followed by a longer description.
	usage() string
	flags(fs *flag.FlagSet)
	run(ctx context.Context, e *Env, args []string) error
}

// commands lists every subcommand; each constructor returns a fresh value so
// no flag state is shared between runs.
var commands = []func() command{
	func() command { return &versionCmd{} },
	func() command { return &sandboxRunCmd{} },
	func() command { return &sandboxShellCmd{} },
	func() command { return &envBuildCmd{} },
	func() command { return &envLsCmd{} },
	func() command { return &envShowCmd{} },
	func() command { return &envRmCmd{} },
	func() command { return &envGCCmd{} },
	func() command { return &envShellCmd{} },
	func() command { return &envTestCmd{} },
	func() command { return &envCoverageCmd{} },
	func() command { return &tasksMutateCmd{} },
	func() command { return &tasksCommitsCmd{} },
	func() command { return &tasksValidateCmd{} },
	func() command { return &rewardCmd{} },
	func() command { return &dedupCmd{} },
	func() command { return &traceFuncCmd{} },
	func() command { return &traceRepoCmd{} },
	func() command { return &traceCheckCmd{} },
	func() command { return &traceShowCmd{} },
	func() command { return &forageCmd{} },
}

// usageError is a problem with how cwm was invoked: Run prints it with the
// command's help and exits 2.
type usageError string

func (e usageError) Error() string { return string(e) }

func usagef(format string, args ...any) error { return usageError(fmt.Sprintf(format, args...)) }

// exitStatus carries the exit status of a user's command that cwm ran; Run
// exits with it without printing anything more.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// Run executes cwm with the given arguments (without the program name) and
// returns the process exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Home: defaultHome()}
	level := slog.LevelWarn
	if os.Getenv("CWM_DEBUG") != "" {
		level = slog.LevelDebug
	}
	e.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	if len(args) == 0 {
		printMainHelp(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		printMainHelp(stdout)
		return 0
	case "help":
		return runHelp(stdout, stderr, args[1:])
	case "-version", "--version":
		args = []string{"version"}
	}
	cmd, rest := lookup(args)
	if cmd == nil {
		if group := groupCommands(args[0]); len(group) > 0 {
			if len(args) > 1 {
				fmt.Fprintf(stderr, "cwm %s: unknown command %q\n\n", args[0], args[1])
			}
			printGroupHelp(stderr, args[0], group)
			return 2
		}
		fmt.Fprintf(stderr, "cwm: unknown command %q\n\n", args[0])
		printMainHelp(stderr)
		return 2
	}
	fs := flag.NewFlagSet("cwm "+cmd.name(), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cmd.flags(fs)
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printCommandHelp(stdout, cmd, fs)
			return 0
		}
		fmt.Fprintf(stderr, "cwm %s: %v\n\n", cmd.name(), err)
		printCommandHelp(stderr, cmd, fs)
		return 2
	}
	err := cmd.run(ctx, e, fs.Args())
	return exitCode(err, cmd, fs, stderr)
}

func exitCode(err error, cmd command, fs *flag.FlagSet, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var st exitStatus
	if errors.As(err, &st) {
		return int(st)
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "cwm %s: %v\n\n", cmd.name(), ue)
		printCommandHelp(stderr, cmd, fs)
		return 2
	}
	fmt.Fprintf(stderr, "cwm %s: %v\n", cmd.name(), err)
	return 1
}

// lookup finds the command named by the longest prefix of args.
func lookup(args []string) (command, []string) {
	for n := min(2, len(args)); n >= 1; n-- {
		name := strings.Join(args[:n], " ")
		for _, mk := range commands {
			if c := mk(); c.name() == name {
				return c, args[n:]
			}
		}
	}
	return nil, nil
}

// groupCommands returns the commands whose name starts with the word group.
func groupCommands(group string) []command {
	var out []command
	for _, mk := range commands {
		c := mk()
		if strings.HasPrefix(c.name(), group+" ") {
			out = append(out, c)
		}
	}
	return out
}

func defaultHome() string {
	if h := os.Getenv("CWM_HOME"); h != "" {
		return h
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "cwm")
	}
	return filepath.Join(os.TempDir(), "cwm")
}

func runHelp(stdout, stderr io.Writer, args []string) int {
	if len(args) == 0 {
		printMainHelp(stdout)
		return 0
	}
	cmd, rest := lookup(args)
	if cmd == nil || len(rest) > 0 {
		if group := groupCommands(args[0]); len(group) > 0 && len(args) == 1 {
			printGroupHelp(stdout, args[0], group)
			return 0
		}
		fmt.Fprintf(stderr, "cwm help: unknown command %q\n", strings.Join(args, " "))
		return 2
	}
	fs := flag.NewFlagSet("cwm "+cmd.name(), flag.ContinueOnError)
	cmd.flags(fs)
	printCommandHelp(stdout, cmd, fs)
	return 0
}

const mainHelp = `cwm builds what a code world model learns from and acts in: executable
repository environments, execution traces in CWM's format, verified bug-fix
tasks, agent trajectories and their rewards. Untrusted code runs only inside
cwm's sandbox (Linux namespaces, overlayfs, cgroups).

Usage:
  cwm COMMAND [flags] [arguments]

Commands:
`

func printMainHelp(w io.Writer) {
	fmt.Fprint(w, mainHelp)
	var cs []command
	for _, mk := range commands {
		cs = append(cs, mk())
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].name() < cs[j].name() })
	printCommandList(w, cs)
	fmt.Fprint(w, `
Run 'cwm help COMMAND' (or 'cwm COMMAND --help') for a command's flags.
Environment: CWM_HOME (default ~/.cache/cwm) holds environments and run state;
CWM_DEBUG=1 logs debug detail to stderr.
`)
}

func printGroupHelp(w io.Writer, group string, cs []command) {
	fmt.Fprintf(w, "Usage:\n  cwm %s COMMAND [flags] [arguments]\n\nCommands:\n", group)
	printCommandList(w, cs)
	fmt.Fprintf(w, "\nRun 'cwm help %s COMMAND' for a command's flags.\n", group)
}

func printCommandList(w io.Writer, cs []command) {
	width := 0
	for _, c := range cs {
		width = max(width, len(c.name()))
	}
	for _, c := range cs {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name(), c.synopsis())
	}
}

func printCommandHelp(w io.Writer, cmd command, fs *flag.FlagSet) {
	u := strings.TrimSpace(cmd.usage())
	first, rest, _ := strings.Cut(u, "\n")
	fmt.Fprintf(w, "Usage: cwm %s %s\n\n%s\n", cmd.name(), first, cmd.synopsis())
	if rest = strings.TrimSpace(rest); rest != "" {
		fmt.Fprintf(w, "\n%s\n", rest)
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintf(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}
