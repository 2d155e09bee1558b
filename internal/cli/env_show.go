package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"cwm/internal/base"
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
commands with where each came from), where it came from (built here, or
the registry reference or file it was pulled or imported from, with the
digests), the base and limit ceilings this machine grants it, whether it
is portable (a stored base travels with it; the host's system does not),
its baseline and whether it is usable. ID is an id, a unique id prefix
or a name. --json prints env.json with "origin" (origin.json) and "baseline"
(baseline.json) added; --tests lists every test with its outcome in each
baseline run.`
}

func (c *envShowCmd) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print the manifest (env.json), its origin and baseline")
	fs.BoolVar(&c.tests, "tests", false, "list every test's baseline")
}

func (c *envShowCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 1 {
		return command.Usagef("want one environment id or name")
	}
	en, err := resolveEnv(ctx, e, args[0])
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(e.Stdout, manifestJSON(en))
	}
	w := e.Stdout
	fmt.Fprintf(w, "id:          %s\n", en.ID)
	fmt.Fprintf(w, "name:        %s\n", en.Name)
	fmt.Fprintf(w, "repository:  %s (%s)\n", en.Repository.Location, en.Repository.Kind)
	fmt.Fprintf(w, "revision:    %s\n", en.Revision)
	fmt.Fprintf(w, "origin:      %s\n", en.Origin())
	if im := en.Image; im != nil {
		fmt.Fprintf(w, "image:       %s, repository at %s, PATH first: %s\n", im.Ref, im.Workdir, orNone(strings.Join(im.Path, ":")))
	}
	fmt.Fprintf(w, "base:        %s, Python %s\n", baseLine(e.Home, en.Base), en.Python)
	fmt.Fprintf(w, "portable:    %s\n", portableLine(en.Base))
	fmt.Fprintf(w, "limits:      %s (env.json: %s)\n", en.SandboxLimits(), en.Limits)
	fmt.Fprintf(w, "built:       %s in %.1fs, layer %s\n", en.BuiltAt.Local().Format("2006-01-02 15:04:05"), en.BuildSecs, humanBytes(en.LayerBytes))
	fmt.Fprintf(w, "layer:       %s\n", en.LayerDir())
	fmt.Fprintf(w, "build log:   %s\n", en.BuildLog)
	if en.Mode != "" {
		fmt.Fprintf(w, "mode:        %s\n", installMode(en))
	}
	if p := en.PythonFrom; p != nil {
		fmt.Fprintf(w, "python from: %s (%s)", p.Base, orNone(p.From))
		if p.Note != "" {
			fmt.Fprintf(w, "; %s", p.Note)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "install:")
	for _, s := range en.Install {
		fmt.Fprintf(w, "  %s  [%s] %s", s.Command, s.Provenance, s.Status)
		if s.Note != "" {
			fmt.Fprintf(w, ": %s", s.Note)
		}
		fmt.Fprintln(w)
		if s.Run != "" && s.Run != s.Command {
			fmt.Fprintf(w, "    ran: %s\n", s.Run)
		}
	}
	fmt.Fprintf(w, "test:        %s  [%s]\n", en.Test.Command, en.Test.Provenance)
	if run := en.TestCommand.String(); run != en.Test.Command {
		fmt.Fprintf(w, "    runs as: %s\n", run)
	}
	if len(en.TestCommand.Dropped) > 0 {
		fmt.Fprintf(w, "    dropped: %s\n", strings.Join(en.TestCommand.Dropped, " "))
	}
	for i, r := range en.Runs {
		fmt.Fprintf(w, "run %d:       %d tests, %s, %.2fs", i+1, r.Tests, r.Exit, r.Seconds)
		if r.Note != "" {
			fmt.Fprintf(w, " (%s)", r.Note)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "baseline:    %s\n", en.Counts)
	for _, m := range en.Missing {
		fmt.Fprintf(w, "missing:     %s\n", m)
	}
	if en.Coverage != nil {
		fmt.Fprintf(w, "coverage:    %d functions, %d tests", en.Coverage.Functions, en.Coverage.Tests)
		if en.Coverage.Note != "" {
			fmt.Fprintf(w, " (%s)", en.Coverage.Note)
		}
		fmt.Fprintln(w)
	}
	if en.Usable {
		fmt.Fprintln(w, "usable:      yes")
	} else {
		fmt.Fprintf(w, "usable:      no: %s\n", en.Reason)
	}
	if c.tests {
		printBaseline(w, en.Baseline)
	}
	return nil
}

// manifestJSON is how --json prints an environment: env.json's fields with
// its origin and baseline, which the store keeps apart.
func manifestJSON(en *env.Env) any {
	return struct {
		*env.Env
		Origin   *env.Origin      `json:"origin"`
		Baseline []env.TestResult `json:"baseline"`
	}{en, en.Origin(), en.Baseline}
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

// baseLine is an environment's base as env show prints it: a stored base
// by its short digest and where it came from (or that this machine lacks
// it), host and directories as they are.
func baseLine(home, b string) string {
	if !env.IsBaseDigest(b) {
		return b
	}
	if sb := base.NewStore(home).Get(b); sb != nil {
		return fmt.Sprintf("%s (%s)", sb.Short(), sb.Describe())
	}
	return base.ShortDigest(b) + " (not in this machine's base store: cwm base import or build it)"
}

// portableLine says whether an environment travels to other machines:
// one on a stored base does (cwm env push brings the base), one on the
// host's system or a directory runs only where those are the same.
func portableLine(b string) string {
	if env.IsBaseDigest(b) {
		return "yes (base " + base.ShortDigest(b) + " travels with it)"
	}
	return "no (" + notPortableBase(b) + ")"
}

// notPortableBase names a base that does not travel.
func notPortableBase(b string) string {
	if b == "" || b == "host" {
		return "host base"
	}
	return "directory base " + b
}

// installMode is how an environment was installed, for env show: the
// mode, the date bound and the lock's size (cwm env lock prints it).
func installMode(en *env.Env) string {
	s := en.Mode
	if en.ExcludeNewer != "" {
		s += ", releases before " + en.ExcludeNewer
	}
	if en.Locked {
		s += ", --locked"
	}
	if len(en.Lock) > 0 {
		s += fmt.Sprintf(", lock of %d packages (cwm env lock %s)", len(en.Lock), en.Name)
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "the project names no Python"
	}
	return s
}
