package selection

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"cwm/internal/golden"
)

// A prediction line of cwm select and a task's tests file, every field
// set: their golden files show the formats (go test ./internal/selection
// -run TestFormats -update).
func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		file string
		v    any
	}{
		{"prediction.jsonl", golden.Filled[Line]()},
		{"tests.jsonl", golden.Filled[TestsFile]()},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatalf("marshal %s: %v", tc.file, err)
		}
		golden.Check(t, filepath.Join("testdata", "formats", tc.file), string(b)+"\n")
	}
}
