package cli

import (
	"context"
	"flag"
	"fmt"
	"io"

	"cwm/internal/command"
	"cwm/internal/shard"
	"cwm/internal/tracer"
)

// traceRunFlags are the flags trace prog and trace tests share: the caps
// of one trace, past which it is dropped as CWM's data dropped such
// traces, and how much of the input a run takes and what it prints.
type traceRunFlags struct {
	maxEvents int
	maxBytes  command.ByteSize
	maxRepr   int
	max       int
	shard     string
	json      bool
}

func (c *traceRunFlags) flags(fs *flag.FlagSet, items string) {
	fs.IntVar(&c.maxEvents, "max-events", tracer.TraceCaps.MaxEvents, "line events per trace; past it the trace is dropped (status too_long)")
	c.maxBytes = command.ByteSize(tracer.TraceCaps.MaxBytes)
	fs.Var(&c.maxBytes, "max-bytes", "trace text `BYTES`; past it the trace is dropped (status too_long)")
	fs.IntVar(&c.maxRepr, "max-repr", tracer.TraceCaps.MaxRepr, "characters of one value's text before it is truncated")
	fs.IntVar(&c.max, "max", 0, "stop once the output holds `N` lines (0: no limit)")
	shardFlag(fs, &c.shard, items)
	fs.BoolVar(&c.json, "json", false, "print the summary as JSON")
}

// check says what is wrong with the flags, as a usage error, and returns
// the shard to run.
func (c *traceRunFlags) check() (shard.Shard, error) {
	if c.maxEvents <= 0 || c.maxBytes <= 0 || c.maxRepr < 64 || c.max < 0 {
		return shard.Shard{}, command.Usagef("--max-events and --max-bytes must be positive, --max-repr at least 64, --max not negative")
	}
	part, err := shard.Parse(c.shard)
	if err != nil {
		return part, command.Usagef("--shard: %v", err)
	}
	return part, nil
}

// done prints a run's summary (as JSON on stdout with --json, else for
// people on stderr) and says how the run ended.
func (c *traceRunFlags) done(ctx context.Context, e *command.Env, sum interface{ Write(io.Writer) }, err error) error {
	if c.json {
		if werr := writeJSON(e.Stdout, sum); werr != nil {
			return werr
		}
	} else {
		sum.Write(e.Stderr)
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("interrupted; run the same command again to resume: %w", ctx.Err())
	}
	return err
}

func (c *traceRunFlags) caps() tracer.Caps {
	return tracer.Caps{MaxEvents: c.maxEvents, MaxBytes: int(c.maxBytes), MaxRepr: c.maxRepr}
}
