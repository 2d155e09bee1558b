package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"cwm/internal/errkind"
)

// Scan calls fn for every complete line of the file at path, in order, with
// its 1-based line number. It reads what a stage wrote and is resuming: a
// torn last line (no '\n', from a crash or a writer still in the middle of
// it) is skipped, as Append will cut it off, and a missing file is not an
// error, since a stage that never wrote anything has nothing to resume.
// Empty lines are skipped, though they still count in line numbers so that
// errors point to the right line. line is only valid during the call. An
// error from fn stops the scan and is returned prefixed with "path:line: ".
//
// Files a command is given to read, not to resume, are read with
// ScanInput instead.
func Scan(path string, fn func(lineNo int, line []byte) error) error {
	err := scan(path, false, fn)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// ScanInput is Scan for a command's input files, where a problem must be
// reported, not repaired: a missing file is an error, and so is a last
// line without '\n' that is not valid JSON (a file cut off by a crash or
// still being written), as a *TornLineError. A last line without '\n' that
// is valid JSON is a line like any other: many published JSONL files end
// that way.
func ScanInput(path string, fn func(lineNo int, line []byte) error) error {
	return scan(path, true, fn)
}

// TornLineError reports an input file whose last line is cut off.
type TornLineError struct {
	Path string
	Line int // 1-based
	Size int // bytes of the cut-off line
}

// Kind is errkind.Input: the file is not what its reader was given.
func (e *TornLineError) Kind() errkind.Kind { return errkind.Input }

func (e *TornLineError) Error() string {
	return fmt.Sprintf("%s:%d: the last line is cut off (%d bytes, no newline at the end of the file, not valid JSON): the file is truncated or still being written",
		e.Path, e.Line, e.Size)
}

func scan(path string, input bool, fn func(lineNo int, line []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open jsonl file: %w", err)
	}
	defer f.Close()

	r := bufio.NewReaderSize(f, 64<<10)
	var long []byte // assembles lines longer than the reader's buffer
	for lineNo := 1; ; {
		chunk, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			continue
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("read %s:%d: %w", path, lineNo, err)
		}
		line := chunk
		if len(long) > 0 {
			line = append(long, chunk...)
			long = line[:0] // reused once fn is done with line
		}
		if err == io.EOF {
			// Whatever is pending has no '\n'.
			if !input || len(bytes.TrimSpace(line)) == 0 {
				return nil
			}
			if !json.Valid(line) {
				return &TornLineError{Path: path, Line: lineNo, Size: len(line)}
			}
			if err := fn(lineNo, line); err != nil {
				return fmt.Errorf("%s:%d: %w", path, lineNo, err)
			}
			return nil
		}
		line = line[:len(line)-1]
		if len(line) > 0 {
			if err := fn(lineNo, line); err != nil {
				return fmt.Errorf("%s:%d: %w", path, lineNo, err)
			}
		}
		lineNo++
	}
}

// Decode unmarshals every complete line of the file at path into a fresh T
// (with Unmarshal) and calls fn with it; lines are read as Scan reads
// them. A malformed line stops the scan with an error "path:line: ...".
func Decode[T any](path string, fn func(lineNo int, v T) error) error {
	return Scan(path, decoder(fn))
}

// DecodeInput is Decode for a command's input files, read as ScanInput
// reads them.
func DecodeInput[T any](path string, fn func(lineNo int, v T) error) error {
	return ScanInput(path, decoder(fn))
}

func decoder[T any](fn func(lineNo int, v T) error) func(int, []byte) error {
	return func(lineNo int, line []byte) error {
		var v T
		if err := Unmarshal(line, &v); err != nil {
			return err
		}
		return fn(lineNo, v)
	}
}

// Keys returns the set of keys of the lines already in the file, as
// extracted by key, so that a resumed stage can skip work it has done.
func Keys(path string, key func(line []byte) (string, error)) (map[string]bool, error) {
	keys := make(map[string]bool)
	err := Scan(path, func(_ int, line []byte) error {
		k, err := key(line)
		if err != nil {
			return err
		}
		keys[k] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	return keys, nil
}

// Field returns a key extractor for Keys that reads the top-level string
// field name of a JSON object line. A line without that field, or where it
// is not a string, is an error: resuming with a wrong key set would redo or
// skip work silently.
func Field(name string) func(line []byte) (string, error) {
	return func(line []byte) (string, error) {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil {
			return "", fmt.Errorf("decode line for field %q: %w", name, err)
		}
		raw, ok := obj[name]
		if !ok {
			return "", fmt.Errorf("line has no field %q", name)
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("field %q is not a string: %s", name, raw)
		}
		return s, nil
	}
}
