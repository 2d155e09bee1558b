package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"cwm/internal/tracer"
)

// TestTraceFuncBoundedRecords traces functions with huge arguments and
// sources and checks that every line written is bounded by the caps,
// whatever its status: a too-long trace echoes only the start of what it
// was given, marked with how much was left out.
func TestTraceFuncBoundedRecords(t *testing.T) {
	t.Setenv("CWM_HOME", t.TempDir())
	dir := t.TempDir()
	in, out := filepath.Join(dir, "funcs.jsonl"), filepath.Join(dir, "traces.jsonl")
	const maxBytes, maxRepr = 256 << 10, 512
	big := strings.Repeat("a", 50<<20) // 50 MB
	longLine := strings.Repeat("b", 100<<10)
	lines := []map[string]string{
		// A 50 MB literal argument: the context alone is over --max-bytes.
		{"id": "literal", "code": "def f(s):\n    return len(s)", "input": strconv.Quote(big)},
		// A 50 MB value built by the call: values are cut at --max-repr.
		{"id": "built", "code": "def f(s):\n    n = 0\n    for c in s[:30000]:\n        n += 1\n    return n", "call": "f('a' * 50_000_000)"},
		// A 100 KB source line run in a loop: every frame repeats it.
		{"id": "long_line", "code": "def f():\n    n = 0\n    for i in range(40):\n        s = '" + longLine + "'; n += len(s)\n    return n", "call": "f()"},
		{"id": "small", "code": "def f(a, b):\n    return a + b", "input": "1, 2"},
	}
	var b strings.Builder
	for _, l := range lines {
		j, _ := json.Marshal(l)
		b.Write(append(j, '\n'))
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "", "trace", "func", "--in", in, "--out", out, "--workers", "2",
		"--max-bytes", strconv.Itoa(maxBytes), "--max-repr", strconv.Itoa(maxRepr))
	if code != 0 {
		t.Fatalf("trace func = %d: %s", code, errs)
	}
	// A record holds at most: the context and the text (each within
	// --max-bytes), the frames (JSON of at most --max-bytes of text),
	// main's output (65536 characters), stdout and stderr (4096 each).
	const bound = 4*maxBytes + 256<<10
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byID := map[string]tracer.Record{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		var r tracer.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if n := len(sc.Bytes()); n > bound {
			t.Errorf("%s (%s): line of %d bytes, want at most %d", r.ID, r.Status, n, bound)
		}
		byID[r.ID] = r
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(byID) != len(lines) {
		t.Fatalf("%d records, want %d", len(byID), len(lines))
	}
	lit := byID["literal"]
	if lit.Status != "too_long" || !strings.Contains(lit.Error, "not run") ||
		!strings.HasSuffix(lit.Input, "<... "+strconv.Itoa(len(big)+2-maxRepr)+" more chars>") ||
		!strings.HasPrefix(lit.Call, "f(\"aaaa") || !strings.Contains(lit.Context, "more chars>") {
		t.Errorf("literal: status %s (%s), input %.40q...%q; want too_long, not run, the input cut at %d chars with a marker",
			lit.Status, lit.Error, lit.Input, lit.Input[max(0, len(lit.Input)-40):], maxRepr)
	}
	if r := byID["built"]; r.Status != "too_long" || r.Call != "f('a' * 50_000_000)" || len(r.Frames) == 0 {
		t.Errorf("built: status %s (%s), call %q, %d frames; want too_long with its frames and call", r.Status, r.Error, r.Call, len(r.Frames))
	}
	if r := byID["long_line"]; r.Status != "too_long" || len(r.Frames) == 0 || !strings.Contains(r.Error, "left out") || r.Stats.Frames != len(r.Frames) {
		t.Errorf("long_line: status %s (%s), %d frames (stats %d); want too_long with a prefix of its frames", r.Status, r.Error, len(r.Frames), r.Stats.Frames)
	}
	if r := byID["small"]; r.Status != "ok" || r.Input != "1, 2" || r.Output != "3" {
		t.Errorf("small: status %s, input %q, output %q; want ok 3 from 1, 2", r.Status, r.Input, r.Output)
	}
	if code, stdout, errs := runCLI(t, "", "trace", "check", out); code != 0 {
		t.Errorf("trace check = %d: %s %s", code, stdout, errs)
	}
}
