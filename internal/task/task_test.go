package task

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/errkind"
	"cwm/internal/golden"
)

// full is a task with every field set, as cwm tasks mutate and commits
// write them.
func full() Task {
	return Task{InstanceID: "textkit__case-1", Repo: "textkit", BaseCommit: "2a6e1e1c",
		Patch: "--- a/x.py\n+++ b/x.py\n", TestPatch: "", ProblemStatement: "title() drops the first letter",
		FailToPass: []string{"tests/test_case.py::test_title"}, PassToPass: []string{"tests/test_case.py::test_lower"},
		Version: "0.1", CreatedAt: "2026-12-01T00:00:00Z", EnvironmentSetupCommit: "2a6e1e1c", HintsText: "see case.py",
		EnvID: "defd590a862aa54c", BugPatch: "--- a/x.py\n+++ b/x.py\n", Kind: "mutate", Family: "off-by-one",
		Operator: "slice-start", File: "textkit/case.py", Function: "title",
		Validation:      &Validation{TestsRun: 6, Seconds: 1.5, Checks: []string{"bug fails FAIL_TO_PASS (run 1)"}},
		StatementSource: "model m", FixClass: &FixClass{Fix: true, Score: 3, Issues: []string{"#12"}, Reasons: []string{"fixes #12"}, Model: "m"}}
}

// The schema's field names are SWE-bench's and cwm's: a task's line is
// its golden file (go test ./internal/task -update), and reads back as it
// was.
func TestSchema(t *testing.T) {
	b, err := json.Marshal(full())
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "task.jsonl"), string(b)+"\n")
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%s) = %v", path, err)
	}
	if diff := cmp.Diff([]Task{full()}, got); diff != "" {
		t.Errorf("Load after Marshal (-want +got):\n%s", diff)
	}
}

// Load refuses a tasks file that is not one, saying where and why, as an
// input error; Written, reading a run's own output to resume it, takes a
// missing file as empty and leaves a torn last line out.
func TestLoad(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		load       string // Load's error, "" for none
		written    int    // tasks Written reads, -1: an error
	}{
		{"good", `{"instance_id": "a"}` + "\n" + `{"instance_id": "b"}` + "\n", "", 2},
		{"malformed", `{"instance_id": "a"}` + "\n{nope\n", ":2: ", -1},
		{"wrong type", `{"instance_id": 7}` + "\n", ":1: ", -1},
		{"no id", `{"repo": "r"}` + "\n", ":1: task without instance_id", -1},
		{"duplicate", `{"instance_id": "a"}` + "\n" + `{"instance_id": "a"}` + "\n", `:2: instance_id "a" already on line 1`, -1},
		{"torn", `{"instance_id": "a"}` + "\n" + `{"instance_id": "b`, ":2: ", 1},
	} {
		path := filepath.Join(t.TempDir(), "tasks.jsonl")
		if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		switch {
		case tc.load == "" && err != nil:
			t.Errorf("%s: Load = %v, want no error", tc.name, err)
		case tc.load != "" && (err == nil || !strings.Contains(err.Error(), path+tc.load) || errkind.Of(err) != errkind.Input):
			t.Errorf("%s: Load = %v (kind %v), want an input error containing %q", tc.name, err, errkind.Of(err), path+tc.load)
		}
		ts, err := Written(path)
		if got := len(ts); (err != nil) != (tc.written < 0) || (err == nil && got != tc.written) {
			t.Errorf("%s: Written = %d tasks, %v; want %d", tc.name, got, err, tc.written)
		}
	}
	missing := filepath.Join(t.TempDir(), "none.jsonl")
	if _, err := Load(missing); errkind.Of(err) != errkind.NotFound {
		t.Errorf("Load of a missing file = %v (kind %v), want a not-found error", err, errkind.Of(err))
	}
	if ts, err := Written(missing); err != nil || len(ts) != 0 {
		t.Errorf("Written of a missing file = %v, %v; want none", ts, err)
	}
}

// LoadAll reads several files in order, and stops at the first bad one.
func TestLoadAll(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	os.WriteFile(a, []byte(`{"instance_id": "a1"}`+"\n"+`{"instance_id": "a2"}`+"\n"), 0o644)
	os.WriteFile(b, []byte(`{"instance_id": "b1"}`+"\n"), 0o644)
	ts, err := LoadAll([]string{a, b})
	var ids []string
	for _, t := range ts {
		ids = append(ids, t.InstanceID)
	}
	if diff := cmp.Diff([]string{"a1", "a2", "b1"}, ids); diff != "" || err != nil {
		t.Errorf("LoadAll = %v (-want +got):\n%s", err, diff)
	}
	if _, err := LoadAll([]string{a, filepath.Join(dir, "none.jsonl")}); errkind.Of(err) != errkind.NotFound {
		t.Errorf("LoadAll with a missing file = %v, want a not-found error", err)
	}
}

// FAIL_TO_PASS and PASS_TO_PASS load as a list or as a JSON-encoded
// string (the published datasets' form); a string that is not a list is
// an input error naming the line.
func TestLoadTestLists(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		f2p, p2p   []string
		err        string
	}{
		{"lists", `{"instance_id": "a", "FAIL_TO_PASS": ["t1"], "PASS_TO_PASS": ["t2", "t3"]}`, []string{"t1"}, []string{"t2", "t3"}, ""},
		{"strings", `{"instance_id": "a", "FAIL_TO_PASS": "[\"t1\"]", "PASS_TO_PASS": "[\"t2\", \"t3\"]"}`, []string{"t1"}, []string{"t2", "t3"}, ""},
		{"empty string list", `{"instance_id": "a", "FAIL_TO_PASS": "[\"t1\"]", "PASS_TO_PASS": "[]"}`, []string{"t1"}, []string{}, ""},
		{"null", `{"instance_id": "a", "FAIL_TO_PASS": null}`, nil, nil, ""},
		{"not a list", `{"instance_id": "a", "FAIL_TO_PASS": "t1"}`, nil, nil, ":1: "},
		{"number", `{"instance_id": "a", "PASS_TO_PASS": 3}`, nil, nil, ":1: "},
	} {
		path := filepath.Join(t.TempDir(), "tasks.jsonl")
		if err := os.WriteFile(path, []byte(tc.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		ts, err := Load(path)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), path+tc.err) || errkind.Of(err) != errkind.Input {
				t.Errorf("%s: Load = %v (kind %v), want an input error containing %q", tc.name, err, errkind.Of(err), path+tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: Load = %v", tc.name, err)
		}
		if diff := cmp.Diff([]string(tc.f2p), ts[0].FailToPass); diff != "" {
			t.Errorf("%s: FAIL_TO_PASS (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff([]string(tc.p2p), ts[0].PassToPass); diff != "" {
			t.Errorf("%s: PASS_TO_PASS (-want +got):\n%s", tc.name, diff)
		}
	}
}
