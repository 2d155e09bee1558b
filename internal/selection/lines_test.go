package selection

import (
	"path/filepath"
	"testing"

	"cwm/internal/golden"
)

// A prediction line of cwm select and a task's tests file, every field
// set: their golden files show the formats (go test ./internal/selection
// -run TestFormats -update).
func TestFormats(t *testing.T) {
	dir := filepath.Join("testdata", "formats")
	golden.CheckJSON(t, filepath.Join(dir, "prediction.jsonl"), golden.Filled[Line]())
	golden.CheckJSON(t, filepath.Join(dir, "tests.jsonl"), golden.Filled[TestsFile]())
}
