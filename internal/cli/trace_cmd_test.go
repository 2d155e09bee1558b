package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"cwm/internal/tracer"
)

// readRecords reads an output file of trace func.
func readRecords(t *testing.T, path string) []tracer.Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []tracer.Record
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r tracer.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, r)
	}
	return out
}

func writeLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTraceFuncCruxEval runs the CruxEval file, as it is, through the
// command, then checks the output with trace check.
func TestTraceFuncCruxEval(t *testing.T) {
	t.Setenv("CWM_HOME", t.TempDir())
	out := filepath.Join(t.TempDir(), "traces.jsonl")
	in := filepath.Join("..", "tracer", "testdata", "cruxeval.jsonl")
	code, _, errs := runCLI(t, "", "trace", "func", "--in", in, "--out", out, "--workers", "2")
	if code != 0 {
		t.Fatalf("trace func = %d: %s", code, errs)
	}
	if !strings.Contains(errs, "traced 800") || !strings.Contains(errs, "ok 800") {
		t.Errorf("summary %q, want 800 traced, all ok", errs)
	}
	code, stdout, errs := runCLI(t, "", "trace", "check", "--json", out)
	var st tracer.CheckStats
	if err := json.Unmarshal([]byte(stdout), &st); err != nil || code != 0 {
		t.Fatalf("trace check = %d, %v: %s %s", code, err, stdout, errs)
	}
	if st.Lines != 800 || st.Statuses["ok"] != 800 || st.Invalid != 0 || st.Frames == 0 || st.TextBytes == 0 {
		t.Errorf("trace check stats = %+v, want 800 valid ok traces", st)
	}
}

func TestTraceFuncResumeFuzzCheckShow(t *testing.T) {
	t.Setenv("CWM_HOME", t.TempDir())
	dir := t.TempDir()
	in, out := filepath.Join(dir, "funcs.jsonl"), filepath.Join(dir, "traces.jsonl")
	writeLines(t, in,
		`{"id": "paper", "code": "def f(a,b):\n    y = a\n    for i in range(b):\n        y += y * i\n    return y\n", "call": "f(1,3)"}`,
		`{"id": "crux", "code": "def f(text):\n    return text.index('z')\n", "input": "'abc'", "output": "ignored"}`,
		`{"id": "entry", "code": "def g(x):\n    if x > 3:\n        return 'big'\n    return 'small'\n", "input": "1", "entry": "g"}`,
		`{"id": "loop", "code": "def f():\n    while True:\n        pass\n", "call": "f()"}`,
		`{"id": "broken", "code": "def f(:\n", "call": "f()"}`,
	)
	args := []string{"trace", "func", "--in", in, "--out", out, "--timeout", "1s", "--fuzz", "2", "--seed", "3"}
	if code, _, errs := runCLI(t, "", args...); code != 0 {
		t.Fatalf("trace func = %d: %s", code, errs)
	}
	recs := readRecords(t, out)
	byID := map[string]tracer.Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	for id, want := range map[string]string{"paper": "ok", "crux": "exception", "entry": "ok", "loop": "timeout", "broken": "error"} {
		if got := byID[id]; string(got.Status) != want {
			t.Errorf("%s: status %s (%s), want %s", id, got.Status, got.Error, want)
		}
	}
	if r := byID["paper"]; !strings.HasSuffix(r.Text, "<|return_sep|><|action_sep|>    return f(1,3)\n<|arg_sep|>\"6\"<|frame_sep|><|end_of_text|>") || r.Output != "6" || r.Call != "f(1,3)" {
		t.Errorf("paper: output %q, text ends %q", r.Output, r.Text[max(0, len(r.Text)-80):])
	}
	if r := byID["entry"]; r.Call != "g(1)" || !strings.Contains(r.Context, "    return g(1)\n") {
		t.Errorf("entry: call %q, context %q", r.Call, r.Context)
	}
	fuzzed := 0
	for _, r := range recs {
		if r.FuzzOf != "" {
			fuzzed++
			if !strings.HasPrefix(r.ID, r.FuzzOf+"/fuzz-") {
				t.Errorf("fuzzed id %q of %q", r.ID, r.FuzzOf)
			}
		}
	}
	if fuzzed == 0 {
		t.Errorf("--fuzz 2 kept no input (g has an untaken branch)")
	}
	// Every line has the same top-level keys, whatever its status, so that
	// schema-inferring loaders (Hugging Face datasets) see one schema.
	data, _ := os.ReadFile(out)
	var keys0 string
	for i, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var m map[string]json.RawMessage
		json.Unmarshal(line, &m)
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if k := strings.Join(keys, ","); i == 0 {
			keys0 = k
		} else if k != keys0 {
			t.Errorf("line %d has keys %s, line 1 has %s", i+1, k, keys0)
		}
	}

	// A second run resumes: nothing is traced again.
	code, _, errs := runCLI(t, "", args...)
	if code != 0 || !strings.Contains(errs, "already in") || len(readRecords(t, out)) != len(recs) {
		t.Errorf("second run = %d, %q, %d lines; want nothing redone", code, errs, len(readRecords(t, out)))
	}

	if code, stdout, errs := runCLI(t, "", "trace", "check", out); code != 0 || !strings.Contains(stdout, "timeout    1") {
		t.Errorf("trace check = %d: %s %s", code, stdout, errs)
	}
	code, stdout, _ := runCLI(t, "", "trace", "show", out, "paper")
	for _, want := range []string{"   8      return f(1,3)", "y=6*", "=> 6"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("trace show = %d, want %q in:\n%s", code, want, stdout)
		}
	}

	// A corrupted text is found and its line named.
	data, _ = os.ReadFile(out)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i, l := range lines {
		if strings.Contains(l, `"id":"paper"`) {
			lines[i] = strings.Replace(l, `{\"a\": \"1\", \"b\": \"3\"}`, `{\"a\": \"1\" \"b\": \"3\"}`, 1)
			writeLines(t, out, lines...)
			code, _, errs := runCLI(t, "", "trace", "check", out)
			if code != 1 || !strings.Contains(errs, "(paper)") || !strings.Contains(errs, "line ") {
				t.Errorf("trace check of a corrupted line = %d, %q; want 1 naming line %d", code, errs, i+1)
			}
			break
		}
	}
}

func TestTraceCommandErrors(t *testing.T) {
	t.Setenv("CWM_HOME", t.TempDir())
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	writeLines(t, bad, `{"id": "a", "code": "def f(): pass", "call": "f()"}`, `{"id": "a", "code": "x", "call": "f()"}`)
	noCall := filepath.Join(dir, "nocall.jsonl")
	writeLines(t, noCall, `{"id": "a", "code": "def f(): pass"}`)
	out := filepath.Join(dir, "out.jsonl")
	cases := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"trace", "func", "--out", out}, 2, "--in and --out are required"},
		{[]string{"trace", "func", "--in", bad, "--out", out, "--workers", "0"}, 2, "must be positive"},
		{[]string{"trace", "func", "--in", filepath.Join(dir, "missing"), "--out", out}, 1, "no such file"},
		{[]string{"trace", "func", "--in", bad, "--out", out}, 1, "bad.jsonl:2: a: id already used on line 1"},
		{[]string{"trace", "func", "--in", noCall, "--out", out}, 1, `exactly one of "call" and "input"`},
		{[]string{"trace", "check"}, 2, "want one FILE"},
		{[]string{"trace", "show", out}, 2, "want FILE and ID"},
		{[]string{"trace", "show", bad, "nope"}, 1, `no trace with id "nope"`},
	}
	for _, c := range cases {
		code, _, errs := runCLI(t, "", c.args...)
		if code != c.code || !strings.Contains(errs, c.err) {
			t.Errorf("cwm %q = %d, %q; want %d and %q", c.args, code, errs, c.code, c.err)
		}
	}
}
