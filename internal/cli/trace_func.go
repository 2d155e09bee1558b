package cli

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"cwm/internal/command"
	"cwm/internal/model"
	"cwm/internal/sandbox"
	"cwm/internal/shard"
	"cwm/internal/tracer"
)

type traceFuncCmd struct {
	endpointFlags
	in, out   string
	workers   int
	timeout   time.Duration
	maxEvents int
	maxBytes  command.ByteSize
	maxRepr   int
	memory    command.ByteSize
	fuzz      int
	seed      int64
	fresh     bool
	shard     string
	inputMix  string
}

func (*traceFuncCmd) Name() string { return "trace func" }
func (*traceFuncCmd) Synopsis() string {
	return "trace Python functions in CWM's trace format"
}
func (*traceFuncCmd) Usage() string {
	return `--in FUNCS.jsonl --out TRACES.jsonl [flags]
Traces each function of FUNCS.jsonl in sandboxes, on the host's Python (3.9
to 3.13), and appends one line per trace to TRACES.jsonl (see
docs/traces.md for both formats).

An input line is {"id", "code", "call"}, call being the expression to trace,
e.g. "f(1, 3)", or CruxEval's {"id", "code", "input"}, input being the
argument text of f (or of the function named by "entry"). Other fields are
ignored, so the CruxEval file is valid input as it is.

The context of a trace is the code followed by
    def main(): # << START_OF_TRACE
        return CALL
and the trace starts at main. An output line has the id, status (ok,
exception, timeout, too_long, memory, error), context, frames, text (the
complete CWM text, for ok and exception), output (what main returned or
raised), error (why, when not ok), and stats.

With --fuzz N, up to N more inputs per function are made by type-preserving
mutation of its arguments, and kept when they reach lines or branches the
earlier inputs did not; each is its own line, with id "<id>/fuzz-<k>".
The same --seed gives the same inputs.

With --input-model M --base-url URL, the model writes each function an
input generator (generate_inputs(), returning argument tuples; the prompt
is in docs/traces.md), which runs in the sandbox under --timeout; its
distinct new inputs are traced, each its own line "<id>/model-<k>", up to
the model's share of the --fuzz N budget (--input-mix model=F, default
0.5: round(F*N)); the fuzzer fills the rest, never repeating an input. A
generator that gives nothing usable (no code, a syntax error, a crash, a
loop, output without end, values that are not picklable literal tuples)
is recorded with its reason in the function's line ("generator") and
counted in the summary. Every line says where its input came from
(input_source: given, fuzz or model).

The run is resumable: ids already in TRACES.jsonl are skipped. --shard i/n
traces the functions of shard i of n.

Examples:
  cwm trace func --in cruxeval.jsonl --out traces.jsonl
  cwm trace func --in funcs.jsonl --out traces.jsonl --fuzz 8 --seed 1
  cwm trace func --in funcs.jsonl --out traces.jsonl --fuzz 8 --input-model M --base-url http://localhost:8000/v1`
}

func (c *traceFuncCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.in, "in", "", "input `FILE` of functions (JSON lines)")
	fs.StringVar(&c.out, "out", "", "output `FILE` of traces (JSON lines, appended)")
	fs.IntVar(&c.workers, "workers", runtime.NumCPU(), "worker processes, each in its own sandbox")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Second, "wall-clock limit per function")
	fs.IntVar(&c.maxEvents, "max-events", tracer.TraceCaps.MaxEvents, "line events per trace before it is cut (status too_long)")
	c.maxBytes = command.ByteSize(tracer.TraceCaps.MaxBytes)
	fs.Var(&c.maxBytes, "max-bytes", "trace text `BYTES` before it is cut (status too_long)")
	fs.IntVar(&c.maxRepr, "max-repr", tracer.TraceCaps.MaxRepr, "characters of one value's text before it is truncated")
	c.memory = 1 << 30
	fs.Var(&c.memory, "memory", "address space of the traced program in `BYTES`")
	fs.IntVar(&c.fuzz, "fuzz", 0, "up to `N` more inputs per function: coverage-guided mutation, and with --input-model the model's generator")
	fs.Int64Var(&c.seed, "seed", 0, "seed of the mutations")
	fs.BoolVar(&c.fresh, "fresh", false, "fork a fresh process for every function (strict isolation, much slower)")
	shardFlag(fs, &c.shard, "trace the functions (by id)")
	fs.StringVar(&c.inputMix, "input-mix", "model=0.5", "`model=F`: the share F (0 to 1) of each function's --fuzz budget the --input-model's generator supplies")
	c.endpointFlags.register(fs, endpointUse{modelFlag: "input-model", model: "`model` that writes each function an input generator (with --base-url; default: none)",
		sampling: true, per: "generator", maxTokens: "4096", concurrency: true})
}

// modelShare parses --input-mix: model=F, F between 0 and 1.
func modelShare(mix string) (float64, error) {
	v, ok := strings.CutPrefix(mix, "model=")
	f, err := strconv.ParseFloat(v, 64)
	if !ok || err != nil || f < 0 || f > 1 {
		return 0, command.Usagef("--input-mix %q: want model=F with F between 0 and 1", mix)
	}
	return f, nil
}

func (c *traceFuncCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	switch {
	case len(args) > 0:
		return command.Usagef("unexpected arguments %q", args)
	case c.in == "" || c.out == "":
		return command.Usagef("--in and --out are required")
	case c.workers <= 0 || c.timeout <= 0 || c.maxEvents <= 0 || c.maxBytes <= 0 || c.maxRepr < 64 || c.fuzz < 0:
		return command.Usagef("--workers, --timeout, --max-events, --max-bytes must be positive, --max-repr at least 64, --fuzz not negative")
	}
	part, err := shard.Parse(c.shard)
	if err != nil {
		return command.Usagef("--shard: %v", err)
	}
	share, err := modelShare(c.inputMix)
	if err != nil {
		return err
	}
	var inputModel *model.Client
	if c.model != "" || c.baseURL != "" {
		if err := c.checkInputModel(); err != nil {
			return err
		}
		if inputModel, err = c.client(4096); err != nil {
			return err
		}
	}
	funcs, err := tracer.ReadFuncs(c.in)
	if err != nil {
		return err
	}
	recycle := 0
	if c.fresh {
		recycle = 1
	}
	run, err := tracer.NewFuncs(tracer.FuncsOptions{Funcs: funcs, Out: c.out, In: c.in, Fuzz: c.fuzz, Seed: c.seed, Shard: part,
		InputModel: inputModel, ModelShare: share, ModelConcurrency: c.concurrency,
		Progress: e.Stderr, Pool: tracer.Options{Workers: c.workers, Timeout: c.timeout,
			Caps:   tracer.Caps{MaxEvents: c.maxEvents, MaxBytes: int(c.maxBytes), MaxRepr: c.maxRepr},
			Memory: int64(c.memory), Recycle: recycle, Log: e.Log}})
	if err != nil {
		return err
	}
	if run.Todo() == 0 {
		fmt.Fprintf(e.Stderr, "cwm trace func: all %d functions of %s are already in %s\n", run.Total(), c.in, c.out)
		_, err := run.Run(ctx, nil) // marks the shard finished
		return err
	}
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: e.Home, Log: e.Log, Warm: -1})
	if err != nil {
		return err
	}
	defer rt.Close()
	sum, err := run.Run(ctx, rt)
	if sum != nil {
		sum.Write(e.Stderr)
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("interrupted; run the same command again to resume: %w", ctx.Err())
	}
	if err == nil && sum.ModelErrors > 0 {
		return fmt.Errorf("the model server failed %d functions after its retries (the first: %w); run again to retry them", sum.ModelErrors, sum.ModelError)
	}
	return err
}

// checkInputModel checks the flags of model-written inputs: the model,
// its endpoint and a budget to share.
func (c *traceFuncCmd) checkInputModel() error {
	switch {
	case c.model == "" || c.baseURL == "":
		return command.Usagef("--input-model and --base-url go together")
	case c.fuzz == 0:
		return command.Usagef("--input-model needs an input budget to share: --fuzz N")
	case c.maxTokens < 0 || c.concurrency < 1:
		return command.Usagef("--max-tokens must not be negative, --concurrency at least 1")
	}
	return nil
}
