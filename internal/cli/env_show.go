package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"cwm/internal/command"
	"cwm/internal/env"
)

type envShowCmd struct {
	json  bool
	tests bool
}

func (*envShowCmd) Name() string     { return "env show" }
func (*envShowCmd) Synopsis() string { return "describe an environment" }
func (*envShowCmd) Usage() string {
	return `[--json] [--tests] ID
Shows how an environment was built (source, revision, install and test
commands with where each came from), its baseline and whether it is usable.
ID is an id, a unique id prefix or a name. --json prints env.json; --tests
lists every test with its outcome in each baseline run.`
}

func (c *envShowCmd) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print the manifest (env.json)")
	fs.BoolVar(&c.tests, "tests", false, "list every test's baseline")
}

func (c *envShowCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 1 {
		return command.Usagef("want one environment id or name")
	}
	env, err := resolveEnv(ctx, e, args[0])
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(e.Stdout, env)
	}
	w := e.Stdout
	fmt.Fprintf(w, "id:          %s\n", env.ID)
	fmt.Fprintf(w, "name:        %s\n", env.Name)
	fmt.Fprintf(w, "repository:  %s (%s)\n", env.Repository.Location, env.Repository.Kind)
	fmt.Fprintf(w, "revision:    %s\n", env.Revision)
	fmt.Fprintf(w, "base:        %s, Python %s\n", env.Base, env.Python)
	fmt.Fprintf(w, "built:       %s in %.1fs, layer %s\n", env.BuiltAt.Local().Format("2006-01-02 15:04:05"), env.BuildSecs, humanBytes(env.LayerBytes))
	fmt.Fprintf(w, "layer:       %s\n", env.LayerDir())
	fmt.Fprintf(w, "build log:   %s\n", env.BuildLog)
	fmt.Fprintln(w, "install:")
	for _, s := range env.Install {
		fmt.Fprintf(w, "  %s  [%s] %s", s.Command, s.Provenance, s.Status)
		if s.Note != "" {
			fmt.Fprintf(w, ": %s", s.Note)
		}
		fmt.Fprintln(w)
		if s.Run != "" && s.Run != s.Command {
			fmt.Fprintf(w, "    ran: %s\n", s.Run)
		}
	}
	fmt.Fprintf(w, "test:        %s  [%s]\n", env.Test.Command, env.Test.Provenance)
	if run := env.TestCommand.String(); run != env.Test.Command {
		fmt.Fprintf(w, "    runs as: %s\n", run)
	}
	if len(env.TestCommand.Dropped) > 0 {
		fmt.Fprintf(w, "    dropped: %s\n", strings.Join(env.TestCommand.Dropped, " "))
	}
	for i, r := range env.Runs {
		fmt.Fprintf(w, "run %d:       %d tests, %s, %.2fs", i+1, r.Tests, r.Exit, r.Seconds)
		if r.Note != "" {
			fmt.Fprintf(w, " (%s)", r.Note)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "baseline:    %s\n", env.Counts)
	for _, m := range env.Missing {
		fmt.Fprintf(w, "missing:     %s\n", m)
	}
	if env.Coverage != nil {
		fmt.Fprintf(w, "coverage:    %d functions, %d tests", env.Coverage.Functions, env.Coverage.Tests)
		if env.Coverage.Note != "" {
			fmt.Fprintf(w, " (%s)", env.Coverage.Note)
		}
		fmt.Fprintln(w)
	}
	if env.Usable {
		fmt.Fprintln(w, "usable:      yes")
	} else {
		fmt.Fprintf(w, "usable:      no: %s\n", env.Reason)
	}
	if c.tests {
		printBaseline(w, env.Baseline)
	}
	return nil
}

func printBaseline(w io.Writer, tests []env.TestResult) {
	fmt.Fprintln(w, "tests:")
	for _, t := range tests {
		outs := make([]string, len(t.Outcomes))
		for i, o := range t.Outcomes {
			outs[i] = string(o)
		}
		fmt.Fprintf(w, "  %-6s %s  (%s)\n", strings.ToUpper(t.Status), t.ID, strings.Join(outs, " "))
	}
}
