package tracer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/trace"
)

// CheckStats is what CheckFile found in a traces file.
type CheckStats struct {
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

// maxProblems is how many invalid lines CheckStats.Problems names.
const maxProblems = 20

// CheckFile checks every line of a file trace func wrote (CheckRecord),
// that ids are unique and that the last line is not cut off, and counts
// what the file holds. Invalid lines are counted and named, not errors;
// the error is for a file that cannot be read or holds no line.
func CheckFile(ctx context.Context, path string) (*CheckStats, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	st := &CheckStats{Statuses: map[string]int{}, Problems: []string{}}
	ids := map[string]int{}
	invalid := func(format string, args ...any) {
		st.Invalid++
		if len(st.Problems) < maxProblems {
			st.Problems = append(st.Problems, fmt.Sprintf(format, args...))
		}
	}
	err := jsonl.ScanInput(path, func(n int, line []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		st.Lines++
		var r Record
		why := ""
		if err := jsonl.Unmarshal(line, &r); err != nil {
			why = "not a trace record: " + err.Error()
		} else {
			if prev := ids[r.ID]; prev > 0 {
				why = fmt.Sprintf("id already on line %d", prev)
			} else {
				why = CheckRecord(&r)
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
			invalid("line %d (%s): %s", n, r.ID, why)
		}
		return nil
	})
	// A file cut off by a crash, or still being written, is invalid at
	// its last line; everything before it is checked as usual.
	var torn *jsonl.TornLineError
	if errors.As(err, &torn) {
		st.Lines++
		invalid("line %d: the last line is cut off (%d bytes, no newline at the end of the file, not valid JSON)", torn.Line, torn.Size)
		err = nil
	}
	if err != nil {
		return nil, err
	}
	if st.Lines == 0 {
		return nil, errkind.Errorf(errkind.Input, "%s: no trace lines", path)
	}
	return st, nil
}

// CheckRecord returns what is wrong with one record, or "": ok and
// exception records have a text that parses strictly (trace.Parse) and
// validates, whose context is the record's and whose frames are the
// record's; the others have no text and give a reason.
func CheckRecord(r *Record) string {
	if r.ID == "" {
		return "no id"
	}
	switch r.Status {
	case OK, Exception:
	case Timeout, TooLong, Error, Memory:
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

var errFound = errors.New("found")

// FindRecord returns the record with id from a traces file; an id that is
// not there is an error of kind errkind.NotFound.
func FindRecord(path, id string) (*Record, error) {
	var rec *Record
	err := jsonl.ScanInput(path, func(n int, line []byte) error {
		var head struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(line, &head) != nil || head.ID != id {
			return nil
		}
		rec = new(Record)
		if err := jsonl.Unmarshal(line, rec); err != nil {
			return fmt.Errorf("trace %s: %w", id, err)
		}
		return errFound
	})
	if err != nil && !errors.Is(err, errFound) {
		return nil, err
	}
	if rec == nil {
		return nil, errkind.Errorf(errkind.NotFound, "%s: no trace with id %q", path, id)
	}
	return rec, nil
}
