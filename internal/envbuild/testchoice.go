package envbuild

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"cwm/internal/env"
	"cwm/internal/sandbox"
	"cwm/internal/testrun"
)

// noTestCollected is what the runners print when they found no test:
// pytest's "collected 0 items" and "no tests ran" (exit 5), unittest's
// "Ran 0 tests" (exit 5 from Python 3.12, 0 before).
var noTestCollected = [][]byte{[]byte("collected 0 items"), []byte("no tests ran"), []byte("Ran 0 tests")}

// collectsNothing reports whether a run found no test to run: no test
// reported, the runner ended on its own (no limit stopped it), and it
// said so, or pytest exited with its "no tests collected" status 5.
// A run that crashed or failed to collect is not such a run: its
// reason is elsewhere, and the next candidate would hide it.
func collectsNothing(rep *testrun.Report, c testrun.Command) bool {
	if len(rep.Tests) > 0 || rep.Result.Reason != sandbox.ReasonNone {
		return false
	}
	if c.Framework == testrun.Pytest && rep.Result.ExitCode == 5 {
		return true
	}
	for _, out := range [][]byte{rep.Result.Stdout, rep.Result.Stderr} {
		for _, s := range noTestCollected {
			if bytes.Contains(out, s) {
				return true
			}
		}
	}
	return false
}

// firstRun is the baseline's first run, which also settles the test
// command: a command that collects no test is not the test command, so
// while a run collects none the recipe's next candidate (a later source's
// command, Recipe.Alternatives) is tried, and e's test command becomes
// the first that collects a test, its provenance naming those passed
// over. When none does, e keeps the first candidate and its run, and
// noTest is the reason the environment is not usable, naming every
// command tried (an environment still: the setup agent starts from it).
func firstRun(ctx context.Context, sbs *env.Sandboxes, e *env.Env, r Recipe, opts testrun.Options, logf, say io.Writer) (rep *testrun.Report, noTest string, err error) {
	var tried []string
	var first *testrun.Report
	for i, cand := range append([]env.Step{r.Test}, r.Alternatives...) {
		if i > 0 {
			tc, err := testrun.Parse(cand.Command)
			if err != nil {
				tried = append(tried, fmt.Sprintf("%s [%s] (%v)", cand.Command, cand.Provenance, err))
				continue
			}
			e.TestCommand, e.Test = tc, cand
			fmt.Fprintf(say, "test: %s  [%s]\n", tc.String(), cand.Provenance)
		}
		rep, err := runSuite(ctx, sbs, e, opts, logf)
		if err != nil {
			return nil, "", err
		}
		if !collectsNothing(rep, e.TestCommand) {
			if len(tried) > 0 {
				e.Test.Provenance += " (collected no test: " + strings.Join(tried, "; ") + ")"
			}
			return rep, "", nil
		}
		if first == nil {
			first = rep
		}
		tried = append(tried, fmt.Sprintf("%s [%s]", e.TestCommand.String(), e.Test.Provenance))
		fmt.Fprintf(say, "test: %s collected no test\n", e.TestCommand.String())
	}
	if len(r.Alternatives) > 0 {
		tc, err := testrun.Parse(r.Test.Command)
		if err != nil {
			return nil, "", err
		}
		e.TestCommand, e.Test = tc, r.Test
		fmt.Fprintf(say, "test: %s  [%s]\n", tc.String(), r.Test.Provenance)
	}
	return first, "a command that collects no test is not the test command: tried " + strings.Join(tried, ", "), nil
}
