package jsonl

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Scan calls fn for every complete line of the file at path, in order, with
// its 1-based line number. A torn last line (no '\n', from a crash or a
// writer still in the middle of it) is skipped, and so are empty lines,
// though they still count in line numbers so that errors point to the right
// line. line is only valid during the call. A missing file is not an error:
// a stage that never wrote anything has nothing to resume. An error from fn
// stops the scan and is returned prefixed with "path:line: ".
func Scan(path string, fn func(lineNo int, line []byte) error) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
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
		if err == io.EOF {
			return nil // whatever is pending has no '\n': a torn line
		}
		if err != nil {
			return fmt.Errorf("read %s:%d: %w", path, lineNo, err)
		}
		line := chunk
		if len(long) > 0 {
			line = append(long, chunk...)
			long = line[:0] // reused once fn is done with line
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

// Decode unmarshals every complete line of the file at path into a fresh T and
// calls fn with it. A malformed line stops the scan with an error
// "path:line: ...".
func Decode[T any](path string, fn func(lineNo int, v T) error) error {
	return Scan(path, func(lineNo int, line []byte) error {
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			return fmt.Errorf("decode line: %w", err)
		}
		return fn(lineNo, v)
	})
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
