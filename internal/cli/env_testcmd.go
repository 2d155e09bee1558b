package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"cwm/internal/command"
	"cwm/internal/env"
)

// envTestCmd is "env test" (the file is not named env_test.go, which Go
// would take for a test file).
type envTestCmd struct {
	json    bool
	timeout time.Duration
	quiet   bool
}

func (*envTestCmd) Name() string     { return "env test" }
func (*envTestCmd) Synopsis() string { return "run an environment's tests in a fresh sandbox" }
func (*envTestCmd) Usage() string {
	return `[flags] ID [TEST_ID...]
Runs the environment's test command (or only the given tests, by the ids
env show --tests lists: pytest node ids or unittest ids) in a fresh sandbox
and prints each test's outcome, marking those that differ from the
baseline. Exits 0 when every test run passed or was skipped, 1 otherwise
(a failure, an error, or a requested test that did not run).`
}

func (c *envTestCmd) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print the outcomes as JSON")
	fs.BoolVar(&c.quiet, "quiet", false, "print only tests that did not pass and the summary")
	fs.DurationVar(&c.timeout, "timeout", 0, "wall-clock limit of the run (default: the environment's)")
}

func (c *envTestCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) < 1 {
		return command.Usagef("want an environment id or name, then optional test ids")
	}
	en, err := resolveEnv(ctx, e, args[0])
	if err != nil {
		return err
	}
	sbs, closeRT, err := openSandboxes(e, -1)
	if err != nil {
		return err
	}
	defer closeRT()
	run, err := env.RunTests(ctx, sbs, en, args[1:], c.timeout)
	if err != nil {
		return err
	}
	rep, out := run.Report, run.Tests
	if c.json {
		if out == nil {
			out = []env.TestOutcome{}
		}
		if err := writeJSON(e.Stdout, map[string]any{
			"env": en.ID, "tests": out, "exit": rep.Result.Describe(), "note": rep.Note,
			"seconds": rep.Result.Duration.Seconds(),
		}); err != nil {
			return err
		}
	} else {
		counts := map[string]int{}
		var b strings.Builder
		for _, o := range out {
			counts[o.Outcome]++
			if c.quiet && (o.Outcome == "pass" || o.Outcome == "skip") && o.Baseline == "" {
				continue
			}
			fmt.Fprintf(&b, "%-7s %s", strings.ToUpper(o.Outcome), o.ID)
			if o.Baseline != "" {
				fmt.Fprintf(&b, "  (baseline: %s)", o.Baseline)
			}
			if o.Message != "" && o.Outcome != "pass" {
				fmt.Fprintf(&b, "  %s", o.Message)
			}
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%d tests: %d pass, %d fail, %d error, %d skip", len(out), counts["pass"], counts["fail"], counts["error"], counts["skip"])
		if counts["missing"] > 0 {
			fmt.Fprintf(&b, ", %d missing", counts["missing"])
		}
		fmt.Fprintf(&b, " in %.2fs\n", rep.Result.Duration.Seconds())
		if rep.Note != "" {
			fmt.Fprintf(&b, "note: %s\n", rep.Note)
		}
		fmt.Fprint(e.Stdout, b.String())
	}
	if run.Bad > 0 || len(out) == 0 {
		return command.ExitStatus(1)
	}
	return nil
}
