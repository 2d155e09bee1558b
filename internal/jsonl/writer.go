// Package jsonl reads and writes JSON Lines files that survive crashes.
//
// Every cwm stage writes its results as one JSON value per line and must be
// resumable after it is killed at any moment, SIGKILL included. The
// guarantee rests on two facts: each line reaches the file in a single
// write(2) on an O_APPEND descriptor, so a crash can only leave one torn
// line, at the end, without its newline; and readers ignore such a line while
// Append cuts it off before writing again. A stage resumes by collecting the
// keys it already wrote (Keys) and skipping that work.
//
// Only process crashes are covered by default: after a machine crash, lines
// not yet flushed by Sync may be missing (but never torn in the middle of the
// file).
package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// Writer appends one JSON value per line. Each line is written with a single
// write(2) on an O_APPEND file, so a crash leaves at most one torn
// (newline-less) last line. A Writer is safe for concurrent use.
type Writer struct {
	path string

	mu sync.Mutex
	// f is the O_APPEND file; it also holds the advisory lock.
	f *os.File
	// err is the first write error. A failed write may have left part of a
	// line in the file, and appending after it would bury a torn line in the
	// middle, so every later write fails too; reopening with Append repairs
	// the file.
	err error
}

// ErrLocked is returned by Append when another open Writer, in this or
// another process, holds the file: two appenders would each cut off the
// other's line in flight as torn.
var ErrLocked = errors.New("jsonl file is already open for appending")

// Append opens path for appending, creating it if needed. If the file ends
// with a torn line (no trailing '\n') left by a crash, Append truncates it away
// first, so the next line starts on a line of its own.
func Append(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open jsonl file: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := cutTornTail(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("repair %s: %w", path, err)
	}
	return &Writer{path: path, f: f}, nil
}

// cutTornTail truncates f after its last '\n' if the file does not end with
// one. It reads backwards in chunks because a torn line can be large.
func cutTornTail(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	end := fi.Size()
	if end == 0 {
		return nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], end-1); err != nil {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	buf := make([]byte, 64<<10)
	keep := int64(0) // the file is one torn line unless a '\n' is found
	for off := end; off > 0; {
		n := min(int64(len(buf)), off)
		off -= n
		if _, err := f.ReadAt(buf[:n], off); err != nil && err != io.EOF {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			keep = off + int64(i) + 1
			break
		}
	}
	if err := f.Truncate(keep); err != nil {
		return err
	}
	// Make the repair durable before new lines land after it.
	return f.Sync()
}

// Write marshals v and appends it as one line.
func (w *Writer) Write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("marshal line for %s: %w", w.path, err)
	}
	// json.Marshal never emits a raw newline (it escapes them in strings and
	// compacts the output of MarshalJSON methods), so b is one line.
	return w.write(append(b, '\n'))
}

// WriteRaw appends line, which must be one JSON value without '\n'.
func (w *Writer) WriteRaw(line []byte) error {
	if bytes.IndexByte(line, '\n') >= 0 {
		return fmt.Errorf("write raw line to %s: line contains a newline", w.path)
	}
	// An invalid line would make every later Decode of the file fail, far
	// from the code that wrote it.
	if !json.Valid(line) {
		return fmt.Errorf("write raw line to %s: not a valid JSON value", w.path)
	}
	buf := make([]byte, len(line)+1)
	copy(buf, line)
	buf[len(line)] = '\n'
	return w.write(buf)
}

// write appends buf, a complete line, with one write(2). (os.File.Write
// splits only writes above 1 GiB.)
func (w *Writer) write(buf []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if _, err := w.f.Write(buf); err != nil {
		w.err = fmt.Errorf("append to %s: %w", w.path, err)
		return w.err
	}
	return nil
}

// Sync flushes the written lines to stable storage, for durability across
// machine crashes; process crashes lose nothing even without it.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", w.path, err)
	}
	return nil
}

// Close closes the file, releasing the lock. Lines already written are
// complete in the file whether or not Close is called.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", w.path, err)
	}
	return nil
}
