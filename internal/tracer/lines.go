package tracer

import (
	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/trace"
)

// TraceLine is a trace as its readers need it: a line of cwm trace func
// (Record) or cwm trace repo (Episode), of which only these fields are
// read.
type TraceLine struct {
	ID      string        `json:"id"`
	Status  string        `json:"status"`
	Context string        `json:"context"`
	Frames  []trace.Frame `json:"frames"`
}

// LoadTraceLines reads traces files. Traces that are not complete (status
// other than ok and exception, or no frames) cannot be predicted to their
// end and are skipped; skipped says how many. A line without an id is an
// input error.
func LoadTraceLines(paths ...string) (lines []TraceLine, skipped int, err error) {
	for _, p := range paths {
		err := jsonl.DecodeInput(p, func(_ int, r TraceLine) error {
			if r.ID == "" {
				return errkind.New(errkind.Input, "trace without id")
			}
			if !Status(r.Status).Complete() || len(r.Frames) == 0 {
				skipped++
				return nil
			}
			lines = append(lines, r)
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
	}
	return lines, skipped, nil
}
