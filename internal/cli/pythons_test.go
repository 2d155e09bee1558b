package cli

import (
	"context"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/base/basetest"
	"cwm/internal/env"
	"cwm/internal/episode"
	"cwm/internal/sandbox"
	"cwm/internal/task"
)

// TestEveryStageOnEveryPython builds the example repository online on
// the Debian bullseye base (Python 3.9) and the trixie base (3.13), and
// runs on each what cwm runs inside an environment's Python: the
// baseline (the reporter plugin), the coverage map (cwmcov), tasks mutate
// (the mutation and AST tools) and validate, a SWE episode's tools (view,
// edit, run the tests) on the task it wrote, env test; and the tracer
// (trace repo, trace tests), which runs on each. The table in
// docs/environments.md ("Every stage on every Python") names this test.
func TestEveryStageOnEveryPython(t *testing.T) {
	for _, c := range []struct{ suite, python string }{{"bullseye", "3.9"}, {"bookworm", "3.11"}, {"trixie", "3.13"}} {
		t.Run(c.suite, func(t *testing.T) { everyStage(t, c.suite, c.python) })
	}
}

func everyStage(t *testing.T, suite, python string) {
	home := t.TempDir()
	t.Setenv("CWM_HOME", home)
	b := basetest.Link(t, basetest.Debian(t, suite), home)
	work := t.TempDir()

	// The baseline: every test of the example passes under the reporter
	// plugin, on the base's Python.
	code, out, errOut := runCLI(t, "", "env", "build", "--base", b.Digest, "--runs", "1", "--name", "textkit", "../../examples/textkit")
	if code != 0 {
		t.Fatalf("env build on %s = %d\nstdout: %s\nstderr: %s", suite, code, out, errOut)
	}
	e := env.NewStore(home).Get(strings.TrimSpace(out))
	if e == nil {
		t.Fatalf("env build printed %q, not an environment of the store", out)
	}
	// Online: pytest and its dependencies come from the index (the lock).
	if !strings.HasPrefix(e.Python, python+".") || e.Mode != env.ModeOnline || len(e.Lock) == 0 || !e.Usable || len(e.Passing()) != 167 {
		t.Fatalf("env on %s: Python %q, mode %q, %d locked, usable %v (%s), %d passing; want Python %s, online, locked, usable, 167 passing",
			suite, e.Python, e.Mode, len(e.Lock), e.Usable, e.Reason, len(e.Passing()), python)
	}

	tasksFile := filepath.Join(work, "tasks.jsonl")
	traceOut := filepath.Join(work, "traces.jsonl")
	steps := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"coverage", []string{"env", "coverage", "textkit", "levenshtein"}, 0, []string{"tests/test_distance.py::"}},
		// A nested, decorated function's qualified name on every Python
		// (3.9's code objects have none: cwmcov reads it from the source).
		{"coverage of a nested function", []string{"env", "coverage", "textkit"}, 0, []string{"textkit/distance.py:43 lcs_length.<locals>.go "}},
		{"mutate", []string{"tasks", "mutate", "--env", "textkit", "--out", tasksFile, "--max", "1", "--functions", "levenshtein",
			"--families", "operators", "--seed", "1", "--quiet", "--json"}, 0, []string{`"written": 1`}},
		{"validate", []string{"tasks", "validate", "--quiet", tasksFile}, 0, []string{"1 tasks: 1 hold, 0 do not"}},
		{"env test", []string{"env", "test", "--quiet", "textkit"}, 0, nil},
		{"trace repo", []string{"trace", "repo", "--env", "textkit", "--out", traceOut, "--workers", "1", "--tests", "test_levenshtein_substitution_cost"},
			0, []string{"traced 1 of 1 tests", "episodes written to " + traceOut, "functions are the root of a complete episode"}},
		{"trace check of trace repo", []string{"trace", "check", traceOut}, 0, []string{"frames ", "line events "}},
		{"trace tests", []string{"trace", "tests", "--tasks", tasksFile, "--out", traceOut + "2", "--workers", "1"},
			0, []string{"traced 179 tests of 1 tasks"}},
	}
	for _, st := range steps {
		code, out, errOut := runCLI(t, "", st.args...)
		all := out + errOut
		if code != st.code {
			t.Errorf("%s on %s: cwm %s = %d, want %d\n%s", st.name, suite, strings.Join(st.args, " "), code, st.code, all)
			continue
		}
		for _, w := range st.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s on %s: cwm %s printed\n%s\nwant it to contain %q", st.name, suite, strings.Join(st.args, " "), all, w)
			}
		}
	}
	// The tracer ran: episodes of the traced test, each a complete trace.
	if data, err := os.ReadFile(traceOut); err != nil || !strings.Contains(string(data), `"status":"ok"`) {
		t.Errorf("trace repo on %s wrote no complete episode (%v):\n%.2000s", suite, err, data)
	}
	tasks, err := task.Load(tasksFile)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks of %s: %d, %v", tasksFile, len(tasks), err)
	}
	sweTools(t, home, e, &tasks[0])
	refusesPython(t, e, "3.8.18")
}

// refusesPython checks that trace repo refuses e once its manifest names
// Python version v, which the tracer does not run on, with the sentence
// that says which Python it has (no test base has such a Python: the
// refusal is decided on the manifest, before any sandbox opens).
func refusesPython(t *testing.T, e *env.Env, v string) {
	path := e.File("env.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m["python"] = v
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "episodes.jsonl")
	code, stdout, errOut := runCLI(t, "", "trace", "repo", "--env", e.ID, "--out", out, "--workers", "1")
	want := "needs Python 3.9 to 3.13 (this environment has " + v[:strings.LastIndex(v, ".")] + ")"
	if code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("trace repo on an environment of Python %s = %d\n%s%s\nwant 1 and %q", v, code, stdout, errOut, want)
	}
}

// sweTools runs a SWE episode of tk on e: the planted bug is seen with
// view, its covering tests fail, and pass once edit puts back the lines
// the bug changed, all run by the environment's Python.
func sweTools(t *testing.T, home string, e *env.Env, tk *task.Task) {
	ctx := context.Background()
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	sb, err := env.NewSandboxes(rt).Open(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := episode.Start(ctx, sb, tk, episode.Options{})
	if err != nil {
		sb.Close()
		t.Fatal(err)
	}
	defer ep.Close()
	if tk.File == "" || len(tk.FailToPass) == 0 {
		t.Fatalf("task %s names no file or no failing test: %+v", tk.InstanceID, tk)
	}
	if obs, err := ep.View(ctx, tk.File, 0, 0); err != nil || !obs.OK || !strings.Contains(obs.Text, "def levenshtein") {
		t.Errorf("view %s = %+v, %v; want its text", tk.File, obs, err)
	}
	runTests := "python -m pytest -q -p no:cacheprovider " + strings.Join(tk.FailToPass, " ")
	if obs, err := ep.Bash(ctx, runTests); err != nil || obs.ExitCode == 0 {
		t.Errorf("%s with the bug = %+v, %v; want a failure", runTests, obs, err)
	}
	// The fix with the edit tool: the lines the bug changed, back.
	orig, err := os.ReadFile(filepath.Join("../../examples/textkit", tk.File))
	if err != nil {
		t.Fatal(err)
	}
	buggy, err := ep.Sandbox().ReadFile(ctx, path.Join(ep.RepoRoot(), tk.File), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	search, replace := changedLines(string(buggy), string(orig))
	if search == "" {
		t.Fatalf("the task's bug left %s as it was", tk.File)
	}
	if obs, err := ep.Edit(ctx, tk.File, search, replace); err != nil || !obs.OK {
		t.Errorf("edit %s: %q -> %q = %+v, %v", tk.File, search, replace, obs, err)
	}
	if obs, err := ep.Bash(ctx, runTests+" && python -c 'import sys; print(sys.version_info[:2])'"); err != nil || obs.ExitCode != 0 ||
		!strings.Contains(obs.Text, "("+strings.Replace(e.Python[:strings.LastIndex(e.Python, ".")], ".", ", ", 1)+")") {
		t.Errorf("%s with the file restored = %+v, %v; want a pass on Python %s", runTests, obs, err, e.Python)
	}
}

// changedLines is the run of lines from the first to the last that differ
// between two texts of as many lines, in each.
func changedLines(a, b string) (string, string) {
	la, lb := strings.SplitAfter(a, "\n"), strings.SplitAfter(b, "\n")
	if len(la) != len(lb) {
		return a, b
	}
	first, last := -1, -1
	for i := range la {
		if la[i] != lb[i] {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return "", ""
	}
	return strings.Join(la[first:last+1], ""), strings.Join(lb[first:last+1], "")
}
