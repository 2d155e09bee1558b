package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"cwm/internal/command"
	"cwm/internal/trace"
	"cwm/internal/tracer"
)

type traceShowCmd struct {
	width  int
	source bool
}

func (*traceShowCmd) Name() string     { return "trace show" }
func (*traceShowCmd) Synopsis() string { return "show one trace step by step" }
func (*traceShowCmd) Usage() string {
	return `[flags] FILE ID
Shows the trace with id ID from FILE (written by cwm trace func): the
context with line numbers, then every step: its event, the line it is on
(indented by call depth) and beside it the locals before the line runs,
".." resolved, those that changed marked with *; return and exception steps
show their value after "=>" or "!!".`
}

func (c *traceShowCmd) Flags(fs *flag.FlagSet) {
	fs.IntVar(&c.width, "width", 60, "longest value shown, in characters (0: no limit)")
	fs.BoolVar(&c.source, "source", true, "print the context before the steps")
}

func (c *traceShowCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 2 {
		return command.Usagef("want FILE and ID")
	}
	rec, err := tracer.FindRecord(args[0], args[1])
	if err != nil {
		return err
	}
	c.print(e.Stdout, rec)
	return nil
}

func (c *traceShowCmd) print(w io.Writer, r *tracer.Record) {
	fmt.Fprintf(w, "%s  %s", r.ID, r.Status)
	if r.Output != "" {
		fmt.Fprintf(w, "  output %s", c.cut(r.Output))
	}
	fmt.Fprintf(w, "  (%d frames, %d line events, %.3fs)\n", len(r.Frames), r.Stats.LineEvents, r.Stats.Seconds)
	if r.Error != "" {
		fmt.Fprintf(w, "error: %s\n", r.Error)
	}
	if r.Leak != "" {
		fmt.Fprintf(w, "leak: %s\n", r.Leak)
	}
	if c.source {
		fmt.Fprintln(w)
		for i, line := range strings.Split(strings.TrimRight(r.Context, "\n"), "\n") {
			fmt.Fprintf(w, "%4d  %s\n", i+1, line)
		}
	}
	fmt.Fprintln(w)
	t := r.Trace()
	full := trace.Expand(t.Frames)
	srcWidth := 0
	for _, f := range t.Frames {
		srcWidth = max(srcWidth, 2*max(f.Depth, 0)+utf8.RuneCountInString(f.Source))
	}
	srcWidth = min(srcWidth, 72)
	for i, f := range t.Frames {
		src := strings.Repeat("  ", max(f.Depth, 0)) + f.Source
		if n := utf8.RuneCountInString(src); n < srcWidth {
			src += strings.Repeat(" ", srcWidth-n)
		}
		fmt.Fprintf(w, "%4d %-9s %4d  %s  %s\n", i+1, f.Event, f.Lineno, src, c.beside(f, full[i].Locals))
	}
}

// beside is what a step shows next to its line.
func (c *traceShowCmd) beside(f trace.Frame, full []trace.Local) string {
	switch f.Event {
	case trace.Return:
		return "=> " + c.cut(f.Arg)
	case trace.Exception:
		return "!! " + c.cut(f.Arg)
	}
	var parts []string
	for j, l := range full {
		mark := ""
		if f.Event == trace.Line && j < len(f.Locals) && f.Locals[j].Value != trace.Unchanged {
			mark = "*"
		}
		parts = append(parts, l.Name+"="+c.cut(l.Value)+mark)
	}
	return strings.Join(parts, " ")
}

func (c *traceShowCmd) cut(s string) string {
	if c.width > 0 && utf8.RuneCountInString(s) > c.width {
		r := []rune(s)
		return string(r[:c.width]) + "..."
	}
	return s
}
