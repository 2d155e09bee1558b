package eval

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"cwm/internal/golden"
)

// The lines the evals write, every field set: their golden files show the
// formats (go test ./internal/eval -run TestLineFormats -update).
func TestLineFormats(t *testing.T) {
	for _, tc := range []struct {
		file string
		line any
	}{
		{"cruxeval.jsonl", golden.Filled[Line]()},
		{"halt.jsonl", golden.Filled[HaltLine]()},
		{"fidelity.jsonl", golden.Filled[FidelityLine]()},
		{"observe.jsonl", golden.Filled[ObserveLine]()},
	} {
		b, err := json.Marshal(tc.line)
		if err != nil {
			t.Fatalf("marshal the line of %s: %v", tc.file, err)
		}
		golden.Check(t, filepath.Join("testdata", "lines", tc.file), string(b)+"\n")
	}
}
