package taskimport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"cwm/internal/errkind"
)

// row is one instance as the dataset publishes it: its fields by name,
// and where it is (line or row number). A row that cannot be read at all
// has bad set and no fields.
type row struct {
	n      int
	fields map[string]any
	bad    string
}

// maxLine bounds one JSONL line: rows carry patches and problem
// statements, a few hundred KiB at most in the published datasets.
const maxLine = 64 << 20

// readRows reads every row of path: JSONL (.jsonl), a JSON list (.json)
// or Parquet (.parquet, or a file starting with Parquet's magic). A row
// that is not a JSON object or is not UTF-8 is a bad row, not an error:
// the rest of the file is read.
func readRows(path string) ([]row, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errkind.Errorf(errkind.NotFound, "%s: no such file", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open rows: %w", err)
	}
	defer f.Close()
	magic := make([]byte, 4)
	n, _ := io.ReadFull(f, magic)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	switch {
	case n == 4 && string(magic) == "PAR1":
		return parquetRows(f, path)
	case strings.EqualFold(filepath.Ext(path), ".json"):
		return jsonRows(f, path)
	}
	return jsonlRows(f)
}

func jsonlRows(r io.Reader) ([]row, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), maxLine)
	var rows []row
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		rows = append(rows, objectRow(n, line))
	}
	if err := sc.Err(); err != nil {
		return rows, errkind.Errorf(errkind.Input, "line %d: %v", len(rows)+1, err)
	}
	return rows, nil
}

// objectRow decodes one row's JSON. encoding/json would quietly turn
// bytes that are not UTF-8 into U+FFFD, so they are looked for first.
func objectRow(n int, b []byte) row {
	if !utf8.Valid(b) {
		return row{n: n, bad: fmt.Sprintf("not UTF-8 (at byte %d)", firstInvalid(b))}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return row{n: n, bad: fmt.Sprintf("not a JSON object: %v", err)}
	}
	if m == nil {
		return row{n: n, bad: "null, not a JSON object"}
	}
	return row{n: n, fields: m}
}

func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

func jsonRows(r io.Reader, path string) ([]row, error) {
	var list []json.RawMessage
	if err := json.NewDecoder(r).Decode(&list); err != nil {
		return nil, errkind.Errorf(errkind.Input, "%s: not a JSON list of rows: %v", path, err)
	}
	rows := make([]row, 0, len(list))
	for i, raw := range list {
		rows = append(rows, objectRow(i+1, raw))
	}
	return rows, nil
}

func parquetRows(f *os.File, path string) ([]row, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return nil, errkind.Errorf(errkind.Input, "%s: not a Parquet file: %v", path, err)
	}
	r := parquet.NewReader(pf)
	defer r.Close()
	var rows []row
	for n := 1; ; n++ {
		m := map[string]any{}
		err := r.Read(&m)
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return rows, errkind.Errorf(errkind.Input, "%s: row %d: %v", path, n, err)
		}
		if k, ok := invalidString(m); ok {
			rows = append(rows, row{n: n, bad: fmt.Sprintf("field %q is not UTF-8", k)})
			continue
		}
		rows = append(rows, row{n: n, fields: m})
	}
}

// invalidString finds a string field of m (at any depth) that is not
// UTF-8, by its top-level name.
func invalidString(m map[string]any) (string, bool) {
	var bad func(v any) bool
	bad = func(v any) bool {
		switch v := v.(type) {
		case string:
			return !utf8.ValidString(v)
		case []byte:
			return !utf8.Valid(v)
		case map[string]any:
			for _, x := range v {
				if bad(x) {
					return true
				}
			}
		case []any:
			for _, x := range v {
				if bad(x) {
					return true
				}
			}
		}
		return false
	}
	for k, v := range m {
		if bad(v) {
			return k, true
		}
	}
	return "", false
}
