package tracer

import (
	"fmt"
	"io"
	"strings"

	"cwm/internal/batch"
)

// RepoSummary is what a trace repo run wrote and what it left out, for
// people (Write) and as JSON (cwm trace repo --json).
type RepoSummary struct {
	// Out is the episodes file; PerFunction the cap per function (0:
	// none).
	Out         string `json:"out"`
	PerFunction int    `json:"max_episodes_per_function"`
	// Tests is how many tests the run concerned (its shard, --tests);
	// Traced those traced by this run with all their episodes written,
	// Skipped those whose episodes were all written before, NotTraced
	// those a total cap left (a rerun with a larger cap resumes them).
	Tests     int `json:"tests"`
	Traced    int `json:"tests_traced"`
	Skipped   int `json:"tests_skipped"`
	NotTraced int `json:"tests_not_traced"`
	// Unrecorded counts the tests with no recording; Failing are the
	// tests that did not pass while traced.
	Unrecorded int      `json:"tests_unrecorded"`
	Failing    []string `json:"tests_failing"`
	// Seen counts the episodes cut from the tests traced; Written those
	// written to Out, Episodes the same by status. Seen is Written plus
	// the function and total caps' drops: the episode caps' drops are
	// written, as lines without text.
	Seen     int            `json:"episodes_seen"`
	Written  int            `json:"episodes_written"`
	Episodes map[Status]int `json:"episodes"`
	Dropped  Dropped        `json:"dropped"`
	// Functions counts the functions that are the root of a complete
	// episode.
	Functions int `json:"functions"`
	// Bytes is what the run appended to Out.
	Bytes int64 `json:"bytes_written"`
	// FileBytes is the size of the file the total caps bound (Out, or
	// Out.spool with a cap per function) at the end of tracing, earlier
	// runs' lines included.
	FileBytes int64 `json:"file_bytes"`
	// Capped says which total cap stopped the run ("" when none did).
	Capped  string  `json:"capped"`
	Seconds float64 `json:"seconds"`
}

// Dropped counts the episodes left out, by reason (DropReason).
type Dropped struct {
	FunctionCap int `json:"function_cap"`
	EventCap    int `json:"event_cap"`
	ByteCap     int `json:"byte_cap"`
	TotalCap    int `json:"total_cap"`
}

func (d *Dropped) add(why DropReason) {
	switch why {
	case DropPerFunction:
		d.FunctionCap++
	case DropEvents:
		d.EventCap++
	case DropBytes:
		d.ByteCap++
	case DropTotal:
		d.TotalCap++
	}
}

// Write prints the summary for people.
func (s *RepoSummary) Write(w io.Writer) {
	counts := map[string]int{}
	for st, n := range s.Episodes {
		counts[string(st)] = n
	}
	fmt.Fprintf(w, "traced %d of %d tests in %.1fs; %d of %d episodes written to %s (%d bytes): %s; %d functions are the root of a complete episode\n",
		s.Traced, s.Tests, s.Seconds, s.Written, s.Seen, s.Out, s.Bytes, batch.FormatCounts(counts), s.Functions)
	perFunction := "no cap per function"
	if s.PerFunction > 0 {
		perFunction = fmt.Sprintf("%d over %d per function", s.Dropped.FunctionCap, s.PerFunction)
	}
	fmt.Fprintf(w, "left out: %s, %d over --max-events and %d over --max-bytes (written as too_long without text), %d at the total cap\n",
		perFunction, s.Dropped.EventCap, s.Dropped.ByteCap, s.Dropped.TotalCap)
	if s.Unrecorded > 0 {
		fmt.Fprintf(w, "%d tests could not be recorded (status error, id TEST#error)\n", s.Unrecorded)
	}
	if len(s.Failing) > 0 {
		fmt.Fprintf(w, "%d tests did not pass while traced (their episodes are kept): %s\n",
			len(s.Failing), strings.Join(s.Failing[:min(5, len(s.Failing))], ", "))
	}
	if s.Skipped > 0 {
		fmt.Fprintf(w, "skipped %d tests whose episodes are already in the output\n", s.Skipped)
	}
	if s.Capped != "" {
		fmt.Fprintf(w, "stopped at the total cap of %s: %d tests not traced (a rerun with a larger cap resumes them)\n",
			s.Capped, s.NotTraced)
	}
}
