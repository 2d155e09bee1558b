package jsonl

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out.jsonl")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// scanAll returns the lines Scan reports, as "lineNo:text".
func scanAll(t *testing.T, path string) []string {
	t.Helper()
	var got []string
	err := Scan(path, func(n int, line []byte) error {
		got = append(got, fmt.Sprintf("%d:%s", n, line))
		return nil
	})
	if err != nil {
		t.Fatalf("Scan(%q) error: %v", path, err)
	}
	return got
}

func TestAppendCutsTornTail(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // spans several 64 KiB backward reads
	tests := []struct {
		name, before, after string
	}{
		{"empty", "", ""},
		{"complete", "{\"a\":1}\n", "{\"a\":1}\n"},
		{"torn after complete", "{\"a\":1}\n{\"a\":", "{\"a\":1}\n"},
		{"only torn", "{\"a\":", ""},
		{"long torn", "{\"a\":1}\n\"" + long, "{\"a\":1}\n"},
		{"long complete then torn", "\"" + long + "\"\n{", "\"" + long + "\"\n"},
		{"newline at chunk edge", strings.Repeat("7", 64<<10-1) + "\n" + strings.Repeat("8", 64<<10), strings.Repeat("7", 64<<10-1) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.before)
			w, err := Append(path)
			if err != nil {
				t.Fatalf("Append: %v", err)
			}
			if err := w.Write(map[string]int{"b": 2}); err != nil {
				t.Fatalf("Write: %v", err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.after + "{\"b\":2}\n"; string(got) != want {
				t.Errorf("file after Append+Write = %.80q (len %d), want %.80q (len %d)", got, len(got), want, len(want))
			}
		})
	}
}

func TestAppendCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.jsonl")
	w, err := Append(path)
	if err != nil {
		t.Fatalf("Append(%q): %v", path, err)
	}
	defer w.Close()
	if err := w.WriteRaw([]byte(`{"id":"a"}`)); err != nil {
		t.Fatal(err)
	}
	if got, want := scanAll(t, path), []string{`1:{"id":"a"}`}; !cmp.Equal(got, want) {
		t.Errorf("lines = %q, want %q", got, want)
	}
}

func TestScan(t *testing.T) {
	long := `"` + strings.Repeat("y", 150<<10) + `"`
	tests := []struct {
		name, content string
		want          []string
	}{
		{"empty", "", nil},
		{"two lines", "1\n2\n", []string{"1:1", "2:2"}},
		{"torn last line skipped", "1\n2\n{\"x\":", []string{"1:1", "2:2"}},
		{"blank lines skipped but counted", "1\n\n3\n", []string{"1:1", "3:3"}},
		{"long lines", long + "\n" + long + "\n5\n" + long, []string{"1:" + long, "2:" + long, "3:5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scanAll(t, writeFile(t, tt.content))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Scan lines mismatch (-want +got):\n%.2000s", diff)
			}
		})
	}
}

func TestScanMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.jsonl")
	if got := scanAll(t, path); got != nil {
		t.Errorf("Scan(missing) lines = %q, want none", got)
	}
	keys, err := Keys(path, Field("id"))
	if err != nil || len(keys) != 0 {
		t.Errorf("Keys(missing) = %v, %v, want empty, nil", keys, err)
	}
}

func TestScanCallbackError(t *testing.T) {
	path := writeFile(t, "1\n2\n3\n")
	stop := errors.New("stop here")
	calls := 0
	err := Scan(path, func(n int, _ []byte) error {
		calls++
		if n == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || !strings.HasPrefix(err.Error(), path+":2: ") || calls != 2 {
		t.Errorf("Scan with failing fn = %v after %d calls, want %q-prefixed stop after 2", err, calls, path+":2: ")
	}
}

type rec struct {
	ID string `json:"id"`
	N  int    `json:"n"`
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name, content string
		want          []rec
		wantErr       string // suffix of the path in the error; "" for none
	}{
		{"ok", "{\"id\":\"a\",\"n\":1}\n{\"id\":\"b\",\"n\":2}\n{\"id\":", []rec{{"a", 1}, {"b", 2}}, ""},
		{"malformed", "{\"id\":\"a\",\"n\":1}\n{\"id\":}\n", []rec{{"a", 1}}, ":2: not valid JSON: "},
		{"wrong type", "{\"id\":\"a\",\"n\":\"1\"}\n", nil, `:1: field "n": want an integer, got a string`},
		{"trailing data", "{\"id\":\"a\"} 7\n", nil, ":1: not valid JSON: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.content)
			var got []rec
			err := Decode(path, func(_ int, v rec) error {
				got = append(got, v)
				return nil
			})
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), path+tt.wantErr)) {
				t.Fatalf("Decode error = %v, want prefix %q", err, path+tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decode values mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestField(t *testing.T) {
	tests := []struct {
		line, want, wantErr string
	}{
		{`{"id":"a-1","n":2}`, "a-1", ""},
		{`{"n":2,"id":"\u00e9"}`, "é", ""},
		{`{"n":2}`, "", `line has no field "id"`},
		{`{"id":3}`, "", `field "id" is not a string: 3`},
		{`["id"]`, "", `decode line for field "id"`},
		{`{"nested":{"id":"x"}}`, "", `line has no field "id"`},
	}
	for _, tt := range tests {
		got, err := Field("id")([]byte(tt.line))
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tt.want || !strings.HasPrefix(gotErr, tt.wantErr) || (tt.wantErr == "") != (err == nil) {
			t.Errorf("Field(%q)(%q) = %q, %v, want %q, %q", "id", tt.line, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestKeys(t *testing.T) {
	path := writeFile(t, "{\"id\":\"a\"}\n{\"id\":\"b\"}\n{\"id\":\"a\"}\n{\"id\":\"c")
	got, err := Keys(path, Field("id"))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"a": true, "b": true}; !cmp.Equal(got, want) {
		t.Errorf("Keys = %v, want %v", got, want)
	}
	path = writeFile(t, "{\"id\":\"a\"}\n{\"n\":1}\n")
	if _, err := Keys(path, Field("id")); err == nil || !strings.HasPrefix(err.Error(), path+":2: ") {
		t.Errorf("Keys with a keyless line = %v, want error at %s:2", err, path)
	}
}

func TestWriteRawRejects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raw.jsonl")
	w, err := Append(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, line := range []string{"{\"a\":\n1}", "{", "", "nope"} {
		if err := w.WriteRaw([]byte(line)); err == nil {
			t.Errorf("WriteRaw(%q) = nil, want error", line)
		}
	}
	if got := scanAll(t, path); got != nil {
		t.Errorf("file after rejected writes has lines %q, want none", got)
	}
}

func TestWriteMarshalError(t *testing.T) {
	w, err := Append(filepath.Join(t.TempDir(), "m.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Write(make(chan int)); err == nil {
		t.Error("Write(chan) = nil, want marshal error")
	}
}

func TestAppendLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.jsonl")
	w, err := Append(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Append(path); !errors.Is(err, ErrLocked) {
		t.Errorf("second Append(%q) = %v, want ErrLocked", path, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(1); err == nil {
		t.Error("Write after Close = nil, want error")
	}
	w2, err := Append(path)
	if err != nil {
		t.Fatalf("Append after Close: %v", err)
	}
	w2.Close()
}

// payload is a line whose body can be checked: Fill is Len copies of one byte
// chosen by the writer, so interleaved or torn writes show up.
type payload struct {
	ID   string `json:"id"`
	Len  int    `json:"len"`
	Fill string `json:"fill"`
}

func (p payload) check() error {
	if len(p.Fill) != p.Len || strings.Trim(p.Fill, p.Fill[:min(1, len(p.Fill))]) != "" {
		return fmt.Errorf("line %s: fill of %d bytes is damaged (want %d equal bytes)", p.ID, len(p.Fill), p.Len)
	}
	return nil
}

func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	w, err := Append(path)
	if err != nil {
		t.Fatal(err)
	}
	const writers, lines = 32, 200
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range lines {
				n := (i * 7919 * (g + 1)) % (16 << 10) // up to 16 KiB, beyond PIPE_BUF
				p := payload{ID: fmt.Sprintf("%d-%d", g, i), Len: n, Fill: strings.Repeat(string(rune('A'+g)), n)}
				if err := w.Write(p); err != nil {
					t.Errorf("Write: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = Decode(path, func(_ int, p payload) error {
		if seen[p.ID] {
			return fmt.Errorf("duplicate id %s", p.ID)
		}
		seen[p.ID] = true
		return p.check()
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != writers*lines {
		t.Errorf("read %d distinct lines, want %d", len(seen), writers*lines)
	}
}

// TestWriteFormat checks that Write emits exactly json.Marshal's bytes, so files
// are readable by any JSON Lines tool.
func TestWriteFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.jsonl")
	w, err := Append(path)
	if err != nil {
		t.Fatal(err)
	}
	v := map[string]any{"s": "a\nb<", "raw": json.RawMessage("{ \"x\" :\n 1 }")}
	if err := w.Write(v); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got, _ := os.ReadFile(path)
	if want := `{"raw":{"x":1},"s":"a\nb\u003c"}` + "\n"; string(got) != want {
		t.Errorf("Write(%v) wrote %q, want %q", v, got, want)
	}
}
