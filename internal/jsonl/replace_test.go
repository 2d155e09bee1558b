package jsonl

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	os.WriteFile(path, []byte("{\"old\":1}\n"), 0o644)
	if err := Replace(path, func(w *bufio.Writer) error { _, err := w.WriteString("{\"new\":1}\n"); return err }); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "{\"new\":1}\n" {
		t.Errorf("after Replace: %q", got)
	}
	boom := errors.New("boom")
	err := Replace(path, func(w *bufio.Writer) error { w.WriteString("{\"half\""); return boom })
	if !errors.Is(err, boom) {
		t.Errorf("Replace with a failing write = %v, want boom", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "{\"new\":1}\n" {
		t.Errorf("a failed Replace changed the file: %q", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("a failed Replace left %d files", len(ents))
	}
}
