package export

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/parquet-go/parquet-go"

	"cwm/internal/errkind"
)

// Format is the file format of an export.
type Format string

const (
	JSONL   Format = "jsonl"
	Parquet Format = "parquet"
)

// FormatOf is the format a file name's extension names: .jsonl or
// .parquet; "" for any other.
func FormatOf(path string) Format {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl":
		return JSONL
	case ".parquet":
		return Parquet
	}
	return ""
}

// ParseFormat checks a --format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case JSONL, Parquet:
		return f, nil
	}
	return "", errkind.Errorf(errkind.Usage, "unknown format %q (want jsonl or parquet)", s)
}

// Ext is the file extension of the format, with its dot.
func (f Format) Ext() string { return "." + string(f) }

// Row groups are cut at whichever comes first: rowGroupRows rows or
// rowGroupBytes of row data. The writer holds one row group's pages in
// memory before writing it, so these bound an export's memory whatever
// the input's size; at CWM's sizes (2 KB to 1 MB a record) a group is
// tens of megabytes, large enough for readers to scan efficiently.
const (
	rowGroupRows  = 16384
	rowGroupBytes = 64 << 20
)

// batchRows is how many rows are handed to the Parquet writer at once.
const batchRows = 256

// sink writes the rows of one output file to w (jsonl.Replace's
// temporary file, renamed into place once the export succeeds, so that a
// failed export leaves no half-written file under the output's name).
type sink[R sized] struct {
	path      string
	enc       *json.Encoder             // JSONL
	pw        *parquet.GenericWriter[R] // Parquet
	batch     []R
	groupSize int
	rows      int64
}

func newSink[R sized](path string, w io.Writer, format Format) *sink[R] {
	s := &sink[R]{path: path}
	if format == JSONL {
		s.enc = json.NewEncoder(w)
		// CWM's tokens and code are full of < > &: written as they are,
		// not as \u003c, so that the file reads as the text it holds.
		s.enc.SetEscapeHTML(false)
		return s
	}
	s.pw = parquet.NewGenericWriter[R](w,
		parquet.Compression(&parquet.Zstd),
		parquet.MaxRowsPerRowGroup(rowGroupRows),
		parquet.CreatedBy("cwm", "", ""))
	return s
}

// write adds one row.
func (s *sink[R]) write(r R) error {
	s.rows++
	if s.enc != nil {
		if err := s.enc.Encode(r); err != nil {
			return fmt.Errorf("write %s: %w", s.path, err)
		}
		return nil
	}
	s.batch = append(s.batch, r)
	s.groupSize += r.size()
	if len(s.batch) >= batchRows || s.groupSize >= rowGroupBytes {
		return s.flushBatch()
	}
	return nil
}

func (s *sink[R]) flushBatch() error {
	if _, err := s.pw.Write(s.batch); err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	clear(s.batch)
	s.batch = s.batch[:0]
	if s.groupSize >= rowGroupBytes {
		// Flush ends the row group: its pages go to the file and their
		// memory is released.
		if err := s.pw.Flush(); err != nil {
			return fmt.Errorf("write %s: %w", s.path, err)
		}
		s.groupSize = 0
	}
	return nil
}

// close writes what is buffered and, for Parquet, the footer.
func (s *sink[R]) close() error {
	if s.pw == nil {
		return nil
	}
	if len(s.batch) > 0 {
		if err := s.flushBatch(); err != nil {
			return err
		}
	}
	if err := s.pw.Close(); err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	return nil
}
