package eval

import (
	"path/filepath"
	"testing"

	"cwm/internal/golden"
)

// The lines the evals write, every field set: their golden files show the
// formats (go test ./internal/eval -run TestLineFormats -update).
func TestLineFormats(t *testing.T) {
	dir := filepath.Join("testdata", "lines")
	golden.CheckJSON(t, filepath.Join(dir, "cruxeval.jsonl"), golden.Filled[Line]())
	golden.CheckJSON(t, filepath.Join(dir, "halt.jsonl"), golden.Filled[HaltLine]())
	golden.CheckJSON(t, filepath.Join(dir, "fidelity.jsonl"), golden.Filled[FidelityLine]())
	golden.CheckJSON(t, filepath.Join(dir, "observe.jsonl"), golden.Filled[ObserveLine]())
}
