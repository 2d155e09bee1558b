package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"

	"cwm/internal/command"
	"cwm/internal/jsonl"
	"cwm/internal/trace"
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

// checkStats is what trace check reports.
type checkStats struct {
	Lines      int            `json:"lines"`
	Statuses   map[string]int `json:"statuses"`
	Fuzzed     int            `json:"fuzzed"`
	Frames     int            `json:"frames"`
	LineEvents int            `json:"line_events"`
	TextBytes  int            `json:"text_bytes"`
	Invalid    int            `json:"invalid"`
	// Problems lists the first invalid lines as "line N (id): why".
	Problems []string `json:"problems"`
}

const maxProblems = 20

func (c *traceCheckCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 1 {
		return command.Usagef("want one FILE")
	}
	if _, err := os.Stat(args[0]); err != nil {
		return err
	}
	st := checkStats{Statuses: map[string]int{}, Problems: []string{}}
	ids := map[string]int{}
	err := jsonl.ScanInput(args[0], func(n int, line []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		st.Lines++
		var r traceRecord
		why := ""
		if err := jsonl.Unmarshal(line, &r); err != nil {
			why = "not a trace record: " + err.Error()
		} else {
			if prev := ids[r.ID]; prev > 0 {
				why = fmt.Sprintf("id already on line %d", prev)
			} else {
				why = checkRecord(&r)
			}
			ids[r.ID] = n
			st.Statuses[string(r.Status)]++
			st.Frames += len(r.Frames)
			st.LineEvents += r.Stats.LineEvents
			st.TextBytes += len(r.Text)
			if r.FuzzOf != "" {
				st.Fuzzed++
			}
		}
		if why != "" {
			st.Invalid++
			if len(st.Problems) < maxProblems {
				st.Problems = append(st.Problems, fmt.Sprintf("line %d (%s): %s", n, r.ID, why))
			}
		}
		return nil
	})
	// A file cut off by a crash, or still being written, is invalid at
	// its last line; everything before it is checked as usual.
	var torn *jsonl.TornLineError
	if errors.As(err, &torn) {
		st.Lines++
		st.Invalid++
		if len(st.Problems) < maxProblems {
			st.Problems = append(st.Problems, fmt.Sprintf("line %d: the last line is cut off (%d bytes, no newline at the end of the file, not valid JSON)", torn.Line, torn.Size))
		}
		err = nil
	}
	if err != nil {
		return err
	}
	if st.Lines == 0 {
		return fmt.Errorf("%s: no trace lines", args[0])
	}
	if c.json {
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			return err
		}
	} else {
		printCheck(e, args[0], &st)
	}
	if st.Invalid > 0 {
		if !c.json {
			return fmt.Errorf("%d of %d lines are invalid", st.Invalid, st.Lines)
		}
		return command.ExitStatus(1)
	}
	return nil
}

func printCheck(e *command.Env, path string, st *checkStats) {
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

// checkRecord returns what is wrong with one record, or "".
func checkRecord(r *traceRecord) string {
	if r.ID == "" {
		return "no id"
	}
	switch r.Status {
	case tracer.OK, tracer.Exception:
	case tracer.Timeout, tracer.TooLong, tracer.Error, tracer.Memory:
		if r.Text != "" {
			return fmt.Sprintf("status %s with a text", r.Status)
		}
		if r.Error == "" {
			return fmt.Sprintf("status %s without a reason", r.Status)
		}
		return ""
	default:
		return fmt.Sprintf("unknown status %q", r.Status)
	}
	t, err := trace.Parse(r.Text)
	if err != nil {
		return err.Error()
	}
	if err := trace.Validate(t); err != nil {
		return err.Error()
	}
	if t.Context != r.Context {
		return "the text's context is not the line's context"
	}
	own := r.Trace()
	if trace.Encode(own) != r.Text {
		return "the frames do not encode to the text"
	}
	if err := trace.Validate(own); err != nil {
		return "frames: " + err.Error()
	}
	return ""
}
