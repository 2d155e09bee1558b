package cli

import (
	"context"
	"flag"
	"fmt"
	"sort"

	"cwm/internal/command"
	"cwm/internal/tracer"
)

type traceCheckCmd struct {
	json bool
}

func (*traceCheckCmd) Name() string { return "trace check" }
func (*traceCheckCmd) Synopsis() string {
	return "validate a traces file strictly and count what it holds"
}
func (*traceCheckCmd) Usage() string {
	return `[--json] FILE
Checks every line of FILE, as written by cwm trace func:
  - ok and exception lines have a text that parses strictly (trace.Parse:
    exactly what the encoder writes) and validates (entry call, balanced
    calls and returns, sources from the context, resolvable ".."), whose
    context is the line's context and whose frames are the line's frames;
  - other lines (timeout, too_long, memory, error) have no text and give a reason;
  - ids are unique;
  - the last line is not cut off (a file whose writer crashed or is still
    writing it).
Prints counts per status and of frames, line events and text bytes, and
exits 1 naming the invalid lines, if any.`
}

func (c *traceCheckCmd) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print the statistics and problems as JSON")
}

func (c *traceCheckCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 1 {
		return command.Usagef("want one FILE")
	}
	st, err := tracer.CheckFile(ctx, args[0])
	if err != nil {
		return err
	}
	if c.json {
		if err := writeJSON(e.Stdout, st); err != nil {
			return err
		}
	} else {
		printCheck(e, args[0], st)
	}
	if st.Invalid > 0 {
		if !c.json {
			return fmt.Errorf("%d of %d lines are invalid", st.Invalid, st.Lines)
		}
		return command.ExitStatus(1)
	}
	return nil
}

func printCheck(e *command.Env, path string, st *tracer.CheckStats) {
	var names []string
	for s := range st.Statuses {
		names = append(names, s)
	}
	sort.Strings(names)
	fmt.Fprintf(e.Stdout, "%s: %d traces", path, st.Lines)
	if st.Fuzzed > 0 {
		fmt.Fprintf(e.Stdout, " (%d from fuzzing)", st.Fuzzed)
	}
	fmt.Fprintln(e.Stdout)
	for _, s := range names {
		fmt.Fprintf(e.Stdout, "  %-10s %d\n", s, st.Statuses[s])
	}
	fmt.Fprintf(e.Stdout, "frames %d, line events %d, text %d bytes\n", st.Frames, st.LineEvents, st.TextBytes)
	for _, p := range st.Problems {
		fmt.Fprintln(e.Stderr, p)
	}
	if st.Invalid > len(st.Problems) {
		fmt.Fprintf(e.Stderr, "... and %d more invalid lines\n", st.Invalid-len(st.Problems))
	}
}
