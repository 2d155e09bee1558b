package cli

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"cwm/internal/command"
	"cwm/internal/sandbox"
	"cwm/internal/shard"
	"cwm/internal/tracer"
)

type traceProgCmd struct {
	in, out   string
	solutions int
	tests     int
	kinds     string
	workers   int
	timeout   time.Duration
	maxEvents int
	maxBytes  command.ByteSize
	maxRepr   int
	maxStdout command.ByteSize
	memory    command.ByteSize
	max       int
	shard     string
	json      bool
}

func (*traceProgCmd) Name() string { return "trace prog" }
func (*traceProgCmd) Synopsis() string {
	return "trace whole programs on their test inputs (CodeContests' records)"
}
func (*traceProgCmd) Usage() string {
	return `--in PROBLEMS.jsonl --out TRACES.jsonl [flags]
Runs the Python 3 solutions of each problem of PROBLEMS.jsonl on the
problem's tests, each with the test's input on stdin, in a sandboxed Python
3.11 under the tracer, and appends one line per run to TRACES.jsonl (see
"Program traces" in docs/traces.md).

A problem is a record in CodeContests' shape: name, description,
public_tests, private_tests, generated_tests (each {"input": [...],
"output": [...]}) and solutions ({"language": [...], "solution": [...]});
the solutions of language 3 (CodeContests' PYTHON3) are run, the first
--solutions of them. Other fields are ignored.

A whole program is traced: its module code is the entry scope, its context
starts with the marker line "# << START_OF_TRACE", then the input as comment
lines, then the program. Reading past the end of the input is an EOFError;
stdout is compared with the expected output as CodeContests does (tokens
apart from white space, case-insensitive, numbers within 1e-5). A line has
id (NAME/s<solution>/<kind>-<test>), name, solution, test_kind, test, the
trace (status, context, frames, text, ...), stdout, expected, correct, result
(passed, wrong_answer, eof, runtime_error, output_limit, timeout, memory,
error) and reason. As in CWM's data, a trace over --max-events line events
or --max-bytes of text is dropped (status too_long, no frames, no text);
the program runs on untraced and is still judged. A problem without a
Python 3 solution, or without tests of the kinds chosen, is one line with
result no_python or no_tests.

The run is resumable: ids already in TRACES.jsonl are skipped. --shard i/n
runs the runs of shard i of n; --max N stops once TRACES.jsonl holds N lines.

Examples:
  cwm trace prog --in code_contests_valid.jsonl --out progs.jsonl
  cwm trace prog --in problems.jsonl --out progs.jsonl --solutions 1 --kinds public,private`
}

func (c *traceProgCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.in, "in", "", "input `FILE` of problems (JSON lines, CodeContests' records)")
	fs.StringVar(&c.out, "out", "", "output `FILE` of program traces (JSON lines, appended)")
	fs.IntVar(&c.solutions, "solutions", 4, "Python 3 solutions run per problem, the first `N` (0: all)")
	fs.IntVar(&c.tests, "tests", 0, "tests run per kind and solution, the first `N` (0: all)")
	fs.StringVar(&c.kinds, "kinds", strings.Join(tracer.TestKinds, ","), "test `KINDS` to run, comma-separated")
	fs.IntVar(&c.workers, "workers", runtime.NumCPU(), "worker processes, each in its own sandbox")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "wall-clock limit per run, traced and untraced")
	fs.IntVar(&c.maxEvents, "max-events", tracer.TraceCaps.MaxEvents, "line events per trace; past it the trace is dropped (status too_long)")
	c.maxBytes = command.ByteSize(tracer.TraceCaps.MaxBytes)
	fs.Var(&c.maxBytes, "max-bytes", "trace text `BYTES`; past it the trace is dropped (status too_long)")
	fs.IntVar(&c.maxRepr, "max-repr", tracer.TraceCaps.MaxRepr, "characters of one value's text before it is truncated")
	c.maxStdout = 1 << 20
	fs.Var(&c.maxStdout, "max-stdout", "stdout kept for judging, in `CHARS` (suffixes K, M); a program printing more is output_limit")
	c.memory = 1 << 30
	fs.Var(&c.memory, "memory", "address space of the traced program in `BYTES`")
	fs.IntVar(&c.max, "max", 0, "stop once the output holds `N` lines (0: no limit)")
	shardFlag(fs, &c.shard, "run the runs (by id)")
	fs.BoolVar(&c.json, "json", false, "print the summary as JSON")
}

func (c *traceProgCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	switch {
	case len(args) > 0:
		return command.Usagef("unexpected arguments %q", args)
	case c.in == "" || c.out == "":
		return command.Usagef("--in and --out are required")
	case c.workers <= 0 || c.timeout <= 0 || c.maxEvents <= 0 || c.maxBytes <= 0 || c.maxStdout <= 0 || c.maxRepr < 64:
		return command.Usagef("--workers, --timeout, --max-events, --max-bytes, --max-stdout must be positive, --max-repr at least 64")
	case c.solutions < 0 || c.tests < 0 || c.max < 0:
		return command.Usagef("--solutions, --tests and --max must not be negative")
	}
	kinds := strings.Split(c.kinds, ",")
	for _, k := range kinds {
		if !slices.Contains(tracer.TestKinds, k) {
			return command.Usagef("--kinds: unknown kind %q (want %s)", k, strings.Join(tracer.TestKinds, ", "))
		}
	}
	part, err := shard.Parse(c.shard)
	if err != nil {
		return command.Usagef("--shard: %v", err)
	}
	probs, err := tracer.ReadProblems(c.in)
	if err != nil {
		return err
	}
	runs, err := tracer.ProgRuns(probs, tracer.ProgSelect{Solutions: c.solutions, Tests: c.tests, Kinds: kinds})
	if err != nil {
		return err
	}
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: e.Home, Log: e.Log, Warm: -1})
	if err != nil {
		return err
	}
	defer rt.Close()
	sum, err := tracer.TraceProgs(ctx, rt, tracer.ProgOptions{Runs: runs, Out: c.out, In: c.in, Max: c.max, Shard: part,
		Progress: e.Stderr, Pool: tracer.Options{Workers: c.workers, Timeout: c.timeout,
			Caps:       tracer.Caps{MaxEvents: c.maxEvents, MaxBytes: int(c.maxBytes), MaxRepr: c.maxRepr},
			MaxCapture: int(c.maxStdout), Memory: int64(c.memory), Log: e.Log}})
	if sum != nil {
		if c.json {
			if err := writeJSON(e.Stdout, sum); err != nil {
				return err
			}
		} else {
			sum.Write(e.Stderr)
		}
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("interrupted; run the same command again to resume: %w", ctx.Err())
	}
	return err
}
