package cli

import (
	"context"
	"flag"
	"runtime"
	"slices"
	"strings"
	"time"

	"cwm/internal/command"
	"cwm/internal/sandbox"
	"cwm/internal/tracer"
)

type traceProgCmd struct {
	in, out   string
	solutions int
	tests     int
	kinds     string
	workers   int
	timeout   time.Duration
	maxStdout command.ByteSize
	memory    command.ByteSize
	traceRunFlags
}

func (*traceProgCmd) Name() string { return "trace prog" }
func (*traceProgCmd) Synopsis() string {
	return "trace whole programs on their test inputs (CodeContests' records)"
}
func (*traceProgCmd) Usage() string {
	return `--in PROBLEMS.jsonl --out TRACES.jsonl [flags]
Runs the Python 3 solutions of each problem of PROBLEMS.jsonl on the
problem's tests, each with the test's input on stdin, under the tracer in
sandboxes, on the host's Python (3.9 to 3.13), and appends one line per run
to TRACES.jsonl (see "Program traces" in docs/traces.md).

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
	c.maxStdout = 1 << 20
	fs.Var(&c.maxStdout, "max-stdout", "stdout kept for judging, in `CHARS` (suffixes K, M); a program printing more is output_limit")
	c.memory = 1 << 30
	fs.Var(&c.memory, "memory", "address space of the traced program in `BYTES`")
	c.traceRunFlags.flags(fs, "run the runs (by id)")
}

func (c *traceProgCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	switch {
	case len(args) > 0:
		return command.Usagef("unexpected arguments %q", args)
	case c.in == "" || c.out == "":
		return command.Usagef("--in and --out are required")
	case c.workers <= 0 || c.timeout <= 0 || c.maxStdout <= 0:
		return command.Usagef("--workers, --timeout and --max-stdout must be positive")
	case c.solutions < 0 || c.tests < 0:
		return command.Usagef("--solutions and --tests must not be negative")
	}
	part, err := c.check()
	if err != nil {
		return err
	}
	kinds := strings.Split(c.kinds, ",")
	for _, k := range kinds {
		if !slices.Contains(tracer.TestKinds, k) {
			return command.Usagef("--kinds: unknown kind %q (want %s)", k, strings.Join(tracer.TestKinds, ", "))
		}
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
			Caps:       c.caps(),
			MaxCapture: int(c.maxStdout), Memory: int64(c.memory), Log: e.Log}})
	if sum == nil {
		return err
	}
	return c.done(ctx, e, sum, err)
}
