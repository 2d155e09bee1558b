package cli

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/envbuild"
)

type envCoverageCmd struct {
	json bool
	test string
}

func (*envCoverageCmd) Name() string { return "env coverage" }
func (*envCoverageCmd) Synopsis() string {
	return "show which functions the passing tests execute"
}
func (*envCoverageCmd) Usage() string {
	return `[flags] ID [FUNCTION]
Shows the environment's test-to-code map: for each test that passes in
every baseline run, the functions and lines of the repository it executes.
Without FUNCTION, lists every covered function with how many tests execute
it. With FUNCTION (a qualified name such as Parser.parse, its last part,
FILE:NAME or FILE:LINE), lists the tests that execute it. With --test, lists
what one test executes. The map is computed at build time, or now if the
build skipped it.`
}

func (c *envCoverageCmd) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print JSON")
	fs.StringVar(&c.test, "test", "", "show the functions and lines test `ID` executes")
}

func (c *envCoverageCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return command.Usagef("want an environment id or name and an optional function")
	}
	en, err := resolveEnv(ctx, e, args[0])
	if err != nil {
		return err
	}
	sbs, closeRT, err := openSandboxes(e, -1)
	if err != nil {
		return err
	}
	cov, err := envbuild.EnsureCoverage(ctx, sbs, en)
	closeRT()
	if err != nil {
		return err
	}
	switch {
	case c.test != "":
		tc, ok := cov.Tests[c.test]
		if !ok {
			return fmt.Errorf("test %q is not in the map of %s (only tests that pass in every baseline run are)", c.test, en.ID)
		}
		if c.json {
			return writeJSON(e.Stdout, tc)
		}
		for _, f := range tc.Functions {
			fmt.Fprintln(e.Stdout, f)
		}
		files := make([]string, 0, len(tc.Lines))
		for f := range tc.Lines {
			files = append(files, f)
		}
		sort.Strings(files)
		for _, f := range files {
			fmt.Fprintf(e.Stdout, "lines %s: %s\n", f, ranges(tc.Lines[f]))
		}
		return nil
	case len(args) == 2:
		refs := cov.FindFunctions(args[1])
		if len(refs) == 0 {
			return fmt.Errorf("no covered function matches %q (cwm env coverage %s lists them)", args[1], args[0])
		}
		var out []env.FuncCoverage
		for _, f := range refs {
			out = append(out, env.FuncCoverage{Func: f, Tests: cov.TestsFor(f)})
		}
		if c.json {
			return writeJSON(e.Stdout, out)
		}
		for _, fc := range out {
			fmt.Fprintf(e.Stdout, "%s: %d tests\n", fc.Func, len(fc.Tests))
			for _, t := range fc.Tests {
				fmt.Fprintf(e.Stdout, "  %s\n", t)
			}
		}
		return nil
	}
	all := cov.Functions()
	if c.json {
		return writeJSON(e.Stdout, all)
	}
	for _, fc := range all {
		fmt.Fprintf(e.Stdout, "%-60s %4d tests\n", fc.Func, len(fc.Tests))
	}
	fmt.Fprintf(e.Stdout, "%d functions under %d passing tests\n", len(all), len(cov.Tests))
	return nil
}

// ranges writes sorted line numbers compactly: 3-7,9,12-13.
func ranges(lines []int) string {
	var parts []string
	for i := 0; i < len(lines); {
		j := i
		for j+1 < len(lines) && lines[j+1] == lines[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", lines[i], lines[j]))
		} else {
			parts = append(parts, fmt.Sprint(lines[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
