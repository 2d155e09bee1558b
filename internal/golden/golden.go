// Package golden compares what a test produced with a golden file, the
// reviewed copy of a format cwm writes, and rewrites golden files when the
// tests run with -update: refresh, then review the change as a diff.
//
//	go test ./internal/trace -update
//	git diff internal/trace/testdata
//
// Importing the package registers -update in the test binary once.
package golden

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files with what the tests produce")

// Check compares got with the file at path (relative to the package
// directory, where tests run), failing t with a diff when they differ.
// With -update it writes got to path instead, creating its directory.
func Check(t testing.TB, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (go test -update writes it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs from what the test produced (-golden +got):\n%s", path, diff)
	}
}

// Updating reports whether the tests run with -update, for fixtures
// refreshed by other means (testscript's UpdateScripts).
func Updating() bool { return *update }

// CheckJSON compares v, marshalled as one JSON line, with the golden file
// at path: the form of a JSONL format's line.
func CheckJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal the line of %s: %v", path, err)
	}
	Check(t, path, string(b)+"\n")
}
