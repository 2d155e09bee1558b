package env

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"cwm/internal/errkind"
)

// BaselineFile holds an environment's baseline (Env.Baseline), apart from
// env.json: it grows with the suite (a line per test and run), and env.json
// is read by every listing of the store.
const BaselineFile = "baseline.json"

// MaxManifest is the largest env.json cwm reads, in the store or in an
// artifact: with the baseline apart, what is left is a few KiB, and a
// manifest cannot make a listing of the store slow or large.
const MaxManifest = 1 << 20

// MaxBaseline is the largest baseline cwm reads: a suite of a few hundred
// thousand tests.
const MaxBaseline = 64 << 20

// readCapped reads a file of at most max bytes; a larger one is refused
// before it is read, with an error of kind errkind.Input that says what to
// do.
func readCapped(path string, max int64, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		fi, _ := f.Stat()
		return nil, errkind.Wrap(errkind.Input, &tooBigError{path, fi.Size(), max, what})
	}
	return data, nil
}

// tooBigError is a file past its cap.
type tooBigError struct {
	path      string
	size, max int64
	what      string
}

func (e *tooBigError) Error() string {
	return fmt.Sprintf("%s is %d bytes, past the %d MiB a %s may have: %s", e.path, e.size, e.max>>20, e.what, rebuildHint)
}

// rebuildHint is what to do with an environment cwm refuses to read.
const rebuildHint = "remove it (cwm env rm, or cwm env gc) and build it again with this cwm (cwm env build), or pull or import it again from an artifact this cwm wrote"

// loadBaseline reads e's baseline file into e.Baseline. An environment
// without one (a version 2 one before its migration) has an empty
// baseline.
func (e *Env) loadBaseline() error {
	p := filepath.Join(e.dir, BaselineFile)
	data, err := readCapped(p, MaxBaseline, "baseline")
	if errors.Is(err, fs.ErrNotExist) {
		e.Baseline = []TestResult{}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the baseline of %s: %w", e.ID, err)
	}
	var b []TestResult
	if err := json.Unmarshal(data, &b); err != nil {
		return errkind.Errorf(errkind.Input, "read %s: %v: %s", p, err, rebuildHint)
	}
	if b == nil {
		b = []TestResult{}
	}
	e.Baseline = b
	return nil
}

// saveBaseline writes e.Baseline to e's baseline file.
func (e *Env) saveBaseline() error {
	b := e.Baseline
	if b == nil {
		b = []TestResult{}
	}
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(e.dir, BaselineFile), append(data, '\n'))
}
