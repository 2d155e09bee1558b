package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTraceRepoCommand drives cwm trace repo on the example repository:
// episodes that cwm trace check accepts, resuming after an interruption to
// the same lines, the cap per function, and usage errors.
func TestTraceRepoCommand(t *testing.T) {
	t.Setenv("CWM_HOME", t.TempDir())
	if code, out, errOut := runCLI(t, "", "env", "build", "--offline", "--runs", "1", "--name", "textkit", "../../examples/textkit"); code != 0 {
		t.Fatalf("env build = %d\n%s%s", code, out, errOut)
	}
	dir := t.TempDir()
	full := filepath.Join(dir, "full.jsonl")
	// All episodes (no cap per function): the resuming checks below write
	// the output's lines directly, where a capped run keeps its spool.
	args := []string{"trace", "repo", "--env", "textkit", "--tests", "test_distance", "--seed", "3", "--workers", "2",
		"--max-episodes-per-function", "0"}
	code, _, errOut := runCLI(t, "", append(args, "--out", full)...)
	if code != 0 || !strings.Contains(errOut, "functions are the root of a complete episode") {
		t.Fatalf("trace repo = %d\n%s", code, errOut)
	}
	// Progress from the start: a line for the run, then one as each batch
	// of tests begins, before any test has finished.
	startAt := strings.Index(errOut, "trace repo: ")
	beginAt := strings.Index(errOut, " begin (")
	barAt := strings.Index(errOut, "trace repo ")
	if startAt < 0 || !strings.Contains(errOut[startAt:], "tests to trace") || beginAt < startAt || barAt < beginAt {
		t.Errorf("want a start line, then a line per batch begun, then the counts:\n%s", errOut)
	}
	if code, out, errOut := runCLI(t, "", "trace", "check", full); code != 0 {
		t.Fatalf("trace check = %d\n%s%s", code, out, errOut)
	}
	lines := readLines(t, full)
	for _, l := range lines {
		var ep struct {
			Test     string         `json:"test"`
			Function map[string]any `json:"function"`
		}
		if err := json.Unmarshal([]byte(l), &ep); err != nil || !strings.Contains(ep.Test, "test_distance") ||
			ep.Function["file"] != "textkit/distance.py" && ep.Function["file"] != "textkit/tokens.py" {
			t.Fatalf("episode of test %q, function %v (%v)", ep.Test, ep.Function, err)
		}
	}

	// An interrupted run: the first third of the lines. Running again
	// writes the rest; the episodes are the ones of the run that was not
	// interrupted.
	part := filepath.Join(dir, "part.jsonl")
	if err := os.WriteFile(part, []byte(strings.Join(lines[:len(lines)/3], "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "", append(args, "--out", part)...); code != 0 || !strings.Contains(errOut, "skipped") {
		t.Fatalf("resumed trace repo = %d\n%s", code, errOut)
	}
	if diff := cmp.Diff(sorted(lines), sorted(readLines(t, part))); diff != "" {
		t.Errorf("resumed output differs from an uninterrupted one (-full +resumed):\n%s", diff)
	}
	if code, _, errOut := runCLI(t, "", append(args, "--out", part)...); code != 0 || !strings.Contains(errOut, "0 episodes") {
		t.Errorf("third run = %d, want nothing new:\n%s", code, errOut)
	}

	capped := filepath.Join(dir, "capped.jsonl")
	if code, _, errOut := runCLI(t, "", append(args, "--out", capped, "--max-episodes-per-function", "1")...); code != 0 {
		t.Fatalf("trace repo --max-episodes-per-function = %d\n%s", code, errOut)
	}
	perFunction := map[string]int{}
	for _, l := range readLines(t, capped) {
		var ep struct {
			Function struct {
				File, Qualname string
			} `json:"function"`
		}
		json.Unmarshal([]byte(l), &ep)
		perFunction[ep.Function.File+":"+ep.Function.Qualname]++
	}
	for f, n := range perFunction {
		if n != 1 {
			t.Errorf("%s: %d episodes, want 1", f, n)
		}
	}
	if _, err := os.Stat(capped + ".spool"); !os.IsNotExist(err) {
		t.Errorf("the spool is left behind: %v", err)
	}

	// The total caps: the run stops taking tests and says so.
	few := filepath.Join(dir, "few.jsonl")
	code, _, errOut = runCLI(t, "", append(args, "--out", few, "--max-episodes", "3")...)
	if code != 0 || len(readLines(t, few)) != 3 || !strings.Contains(errOut, "stopped at the total cap of 3 episodes") {
		t.Errorf("trace repo --max-episodes 3 = %d, %d lines\n%s", code, len(readLines(t, few)), errOut)
	}

	for _, bad := range [][]string{
		{"--max-episodes", "0"},
		{"--max-total-bytes", "0"},
		{"--step-in", "1.5"},
		{"--max-depth", "-1"},
		{"--context", "file"},
		{"--env", ""},
	} {
		a := append(append([]string{}, args...), "--out", filepath.Join(dir, "bad.jsonl"))
		if code, _, errOut := runCLI(t, "", append(a, bad...)...); code != 2 {
			t.Errorf("trace repo %v = %d, want 2\n%s", bad, code, errOut)
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}
