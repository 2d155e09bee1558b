package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"cwm/internal/command"
	"cwm/internal/testrun"
)

// envTestCmd is "env test" (the file is not named env_test.go, which Go
// would take for a test file).
type envTestCmd struct {
	fs      *flag.FlagSet // for flags after the arguments
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
	c.fs = fs
	fs.BoolVar(&c.json, "json", false, "print the outcomes as JSON")
	fs.BoolVar(&c.quiet, "quiet", false, "print only tests that did not pass and the summary")
	fs.DurationVar(&c.timeout, "timeout", 0, "wall-clock limit of the run (default: the environment's)")
}

type testOutcomeJSON struct {
	ID       string  `json:"id"`
	Outcome  string  `json:"outcome"`
	Seconds  float64 `json:"seconds"`
	Baseline string  `json:"baseline,omitempty"`
	Message  string  `json:"message,omitempty"`
}

func (c *envTestCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	args, err := interspersed(c.fs, args)
	if err != nil {
		return err
	}
	if len(args) < 1 {
		return command.Usagef("want an environment id or name, then optional test ids")
	}
	env, err := resolveEnv(e, args[0])
	if err != nil {
		return err
	}
	ids := args[1:]
	s, done, err := openEnvSandbox(ctx, e, env)
	if err != nil {
		return err
	}
	defer done()
	rep, err := testrun.Run(ctx, s, env.TestCommand, testrun.Options{IDs: ids, Timeout: c.timeout,
		PythonVersion: env.Python, OutputLimit: env.Limits.Output})
	if err != nil {
		return err
	}
	baseline := map[string]string{}
	for _, t := range env.Baseline {
		baseline[t.ID] = t.Status
	}
	var out []testOutcomeJSON
	seen := map[string]bool{}
	bad := 0
	for _, t := range rep.Tests {
		seen[t.ID] = true
		o := testOutcomeJSON{ID: t.ID, Outcome: string(t.Outcome), Seconds: t.Time.Seconds(), Message: t.Message}
		if b, ok := baseline[t.ID]; ok && b != o.Outcome {
			o.Baseline = b
		}
		if t.Outcome == testrun.Fail || t.Outcome == testrun.Error {
			bad++
		}
		out = append(out, o)
	}
	for _, id := range ids {
		if !seen[id] {
			out = append(out, testOutcomeJSON{ID: id, Outcome: "missing", Baseline: baseline[id]})
			bad++
		}
	}
	if c.json {
		if out == nil {
			out = []testOutcomeJSON{}
		}
		if err := writeJSON(e.Stdout, map[string]any{
			"env": env.ID, "tests": out, "exit": rep.Result.Describe(), "note": rep.Note,
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
	if bad > 0 || len(out) == 0 {
		return command.ExitStatus(1)
	}
	return nil
}
