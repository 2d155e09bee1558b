package envbuild

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCappedLog: a log past maxBuildLog keeps its first and last halves
// and a line saying how much was cut between them, whatever the sizes of
// the writes; a smaller one is kept whole.
func TestCappedLog(t *testing.T) {
	const half = maxBuildLog / 2
	for _, tc := range []struct {
		name   string
		total  int
		writes int // bytes per write
	}{
		{"small", 1000, 7},
		{"exactly the cap", maxBuildLog, 1 << 16},
		{"past the cap in small writes", maxBuildLog + 3*half + 12345, 4093},
		{"past the cap in one write", 3 * maxBuildLog, 3 * maxBuildLog},
		{"one byte past", maxBuildLog + 1, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Distinct bytes by position, so that a misplaced byte shows.
			data := make([]byte, tc.total)
			for i := range data {
				data[i] = byte('a' + (i*7+i/251)%26)
			}
			p := filepath.Join(t.TempDir(), "build.log")
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			l := newCappedLog(f)
			for rest := data; len(rest) > 0; {
				k := min(tc.writes, len(rest))
				if n, err := l.Write(rest[:k]); n != k || err != nil {
					t.Fatalf("Write(%d bytes) = %d, %v", k, n, err)
				}
				rest = rest[k:]
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(p)
			if tc.total <= maxBuildLog {
				if !bytes.Equal(got, data) {
					t.Fatalf("log of %d bytes kept as %d bytes, want it whole", tc.total, len(got))
				}
				return
			}
			line := fmt.Sprintf("\n[cwm: %d bytes of the build log cut here; it keeps its first and last 8 MiB]\n", tc.total-maxBuildLog)
			want := string(data[:half]) + line + string(data[tc.total-half:])
			if string(got) != want {
				i := 0
				for i < len(got) && i < len(want) && got[i] == want[i] {
					i++
				}
				t.Fatalf("log of %d bytes kept as %d bytes, want %d; first difference at %d (line %q)", tc.total, len(got), len(want), i, strings.TrimSpace(line))
			}
		})
	}
}
