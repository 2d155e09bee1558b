package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTraceFuncKilled kills cwm trace func --fuzz with SIGKILL while two
// slow functions are in flight, resumes it, and checks that the resumed
// run writes a new line within seconds, not after redoing those functions
// first, and that the final output has every function exactly once.
//
// CruxEval's sample_63 and sample_129 are slow to fuzz the way a kill
// finds them: their mutated inputs loop forever (an empty prefix to strip,
// a count that never reaches its bound). Each such input used to run on
// untraced until the 5 s wall clock after its recording stopped, though
// fuzzing can only keep complete traces, so the two took 20 s and 10 s.
func TestTraceFuncKilled(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	in, out := filepath.Join(dir, "funcs.jsonl"), filepath.Join(dir, "traces.jsonl")
	crux := cruxEvalLines(t)
	var b bytes.Buffer
	var ids []string
	add := func(line []byte) {
		var f struct {
			ID string `json:"id"`
		}
		json.Unmarshal(line, &f)
		ids = append(ids, f.ID)
		b.Write(append(line, '\n'))
	}
	// Five quick functions, then the two slow ones, taken by the two
	// workers as soon as the five are written; then the rest.
	for _, l := range crux[:5] {
		add(l)
	}
	add(crux[63])
	add(crux[129])
	for i, l := range crux[5:100] {
		if i+5 != 63 {
			add(l)
		}
	}
	if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"trace", "func", "--in", in, "--out", out, "--fuzz", "4", "--workers", "2"}

	// Kill the first run once the five quick functions are written.
	cmd := cliChild(t, home, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !hasIDs(out, ids[:5]) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	before := countLines(out)
	if !hasIDs(out, ids[:5]) {
		t.Fatalf("the first run wrote %d lines before the kill, not the first five functions\n%s", before, errb.String())
	}
	if hasIDs(out, ids) {
		t.Fatalf("the first run finished before it could be killed")
	}

	// The resumed run writes its first new line quickly.
	cmd = cliChild(t, home, args...)
	errb.Reset()
	cmd.Stderr = &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var first time.Duration
	var err error
wait:
	for {
		select {
		case err = <-exited:
			break wait
		case <-time.After(5 * time.Millisecond):
			if first == 0 && countLines(out) > before {
				first = time.Since(start)
			}
		}
	}
	if err != nil {
		t.Fatalf("resumed run: %v\n%s", err, errb.String())
	}
	if first == 0 && countLines(out) > before {
		first = time.Since(start)
	}
	if first == 0 || first > 5*time.Second {
		t.Errorf("the resumed run wrote its first new line after %v, want under 5s (the fresh run's first came at once)", first)
	}

	// Every function exactly once, fuzzed inputs once each, after their
	// function's own id is known.
	seen := map[string]int{}
	fuzzOf := map[string]string{}
	for _, r := range readRecords(t, out) {
		seen[r.ID]++
		if r.FuzzOf != "" {
			fuzzOf[r.ID] = r.FuzzOf
		}
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("function %s appears %d times, want once", id, seen[id])
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("id %s appears %d times, want once", id, n)
		}
		if parent, ok := fuzzOf[id]; ok && (!strings.HasPrefix(id, parent+"/fuzz-") || seen[parent] != 1) {
			t.Errorf("fuzzed input %s of %q", id, parent)
		}
	}
	if len(seen)-len(fuzzOf) != len(ids) {
		t.Errorf("%d functions in the output, want %d", len(seen)-len(fuzzOf), len(ids))
	}
	if code, stdout, errs := runCLI(t, "", "trace", "check", out); code != 0 {
		t.Errorf("trace check = %d: %s %s", code, stdout, errs)
	}
}

// cruxEvalLines returns the lines of the package's copy of CruxEval (see
// testdata/cruxeval.LICENSE beside it).
func cruxEvalLines(t *testing.T) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "tracer", "testdata", "cruxeval.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSpace(data), []byte("\n"))
}

// countLines counts the complete lines of the file at path.
func countLines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

// hasIDs reports whether every id has a complete line in the file at path.
func hasIDs(path string, ids []string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	have := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			have[r.ID] = true
		}
	}
	for _, id := range ids {
		if !have[id] {
			return false
		}
	}
	return true
}
