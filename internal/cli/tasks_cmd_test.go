package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/task"
)

// TestTasksCommands drives tasks mutate, validate and commits end to end
// on a small repository: tasks are written, resumed, re-validated; a task
// edited so that it no longer holds is reported; usage errors exit 2.
func TestTasksCommands(t *testing.T) {
	t.Setenv("CWM_HOME", t.TempDir())
	code, _, errOut := runCLI(t, "", "env", "build", "--offline", "--runs", "2", "--quiet", "../tasks/testdata/hazards")
	if code != 0 {
		t.Fatalf("env build = %d: %s", code, errOut)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "tasks.jsonl")
	exclude := filepath.Join(dir, "exclude.txt")
	if err := os.WriteFile(exclude, []byte("@swebench\nsomeone/hazards\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mutate := []string{"tasks", "mutate", "--env", "hazards", "--out", out, "--max", "2", "--functions", "count_up",
		"--families", "statements,functions", "--seed", "2", "--quiet"}
	steps := []struct {
		name string
		args []string
		code int
		want []string // substrings of stdout+stderr
	}{
		{"mutate", append(mutate, "--json"), 0, []string{`"written": 2`, `"statements": {`}},
		{"mutate resumes", mutate, 0, []string{"wrote 0 tasks", "2 tasks already written"}},
		{"validate", []string{"tasks", "validate", out}, 0, []string{"2 tasks: 2 hold, 0 do not"}},
		{"validate json", []string{"tasks", "validate", out, "--json", "--workers", "2"}, 0, []string{`"ok": true`, `"checks": [`}},
		{"excluded", []string{"tasks", "mutate", "--env", "hazards", "--out", out, "--exclude-repos", exclude}, 1, []string{"decontamination:", "its name hazards is a listed repository's", "--exclude-repos none skips the check"}},
		{"no env", []string{"tasks", "mutate", "--out", out}, 2, []string{"--env and --out are required"}},
		{"bad family", []string{"tasks", "mutate", "--env", "hazards", "--out", out, "--families", "nope"}, 2, []string{`unknown family "nope"`}},
		{"bad shard", []string{"tasks", "mutate", "--env", "hazards", "--out", out, "--shard", "2/2"}, 2, []string{"0 <= i < n"}},
		{"commits needs a choice", []string{"tasks", "commits", "--env", "hazards", "--out", out}, 2, []string{"give either --commits or --auto"}},
		{"commits need history", []string{"tasks", "commits", "--env", "hazards", "--out", out, "--auto"}, 1, []string{"plain directory"}},
		{"validate nothing", []string{"tasks", "validate"}, 2, []string{"want one tasks file"}},
	}
	for _, st := range steps {
		code, stdout, stderr := runCLI(t, "", st.args...)
		all := stdout + stderr
		if code != st.code {
			t.Errorf("%s: cwm %s = %d, want %d\n%s", st.name, strings.Join(st.args, " "), code, st.code, all)
			continue
		}
		for _, w := range st.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: output lacks %q:\n%s", st.name, w, all)
			}
		}
	}

	// A task whose FAIL_TO_PASS lists a test the bug does not break, or
	// whose patch does not apply, does not hold: validate names both and
	// exits 1.
	tasks, err := task.Load(out)
	if err != nil || len(tasks) != 2 {
		t.Fatalf("tasks file: %v (%d tasks)", err, len(tasks))
	}
	broken := tasks[0]
	broken.FailToPass = append(broken.FailToPass, broken.PassToPass...)
	unfixable := tasks[1]
	unfixable.Patch = unfixable.BugPatch // applying the bug again cannot work
	var b strings.Builder
	for _, tk := range []task.Task{broken, unfixable} {
		line, _ := json.Marshal(tk)
		b.Write(line)
		b.WriteByte('\n')
	}
	edited := filepath.Join(dir, "edited.jsonl")
	if err := os.WriteFile(edited, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "", "tasks", "validate", "--quiet", edited)
	if code != 1 || !strings.Contains(stdout, "FAIL "+broken.InstanceID+": FAIL_TO_PASS test") ||
		!strings.Contains(stdout, "FAIL "+unfixable.InstanceID+": patch does not apply") || !strings.Contains(stdout, "0 hold, 2 do not") {
		t.Errorf("validate of an edited task = %d:\n%s%s", code, stdout, stderr)
	}
}
