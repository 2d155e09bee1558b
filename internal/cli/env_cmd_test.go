package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestEnvCommands drives the env commands end to end on small test
// repositories: build, list, show, test, coverage, shell, gc, rm.
func TestEnvCommands(t *testing.T) {
	t.Setenv("CWM_HOME", t.TempDir())
	code, out, errOut := runCLI(t, "", "env", "build", "--offline", "--runs", "2", "--name", "greet", "../envbuild/testdata/wfonly")
	if code != 0 {
		t.Fatalf("env build = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	id := strings.TrimSpace(out)
	if len(id) != 16 || !strings.Contains(errOut, "baseline: 3 tests: 3 pass") {
		t.Fatalf("env build printed id %q, progress:\n%s", id, errOut)
	}
	code, _, errOut = runCLI(t, "", "env", "build", "--offline", "--quiet", "../envbuild/testdata/allfail")
	if code != 1 || !strings.Contains(errOut, "is not usable: no test passes in every run") {
		t.Errorf("env build allfail = %d, stderr %q; want 1 and the reason", code, errOut)
	}

	steps := []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  []string // substrings of stdout+stderr
	}{
		{"ls", "", []string{"env", "ls"}, 0, []string{id[:12], "greet", "3/3", "1 unusable build(s) not listed"}},
		{"ls all", "", []string{"env", "ls", "--all"}, 0, []string{id[:12], "greet", "yes", "3/3", "allfail", "no", "0/2"}},
		{"show by name", "", []string{"env", "show", "greet"}, 0, []string{"id:          " + id, "[.github/workflows/tests.yaml: job unit, step Unit tests]", "dropped: --cov=greet -x", "usable:      yes"}},
		{"show tests", "", []string{"env", "show", id[:6], "--tests"}, 0, []string{"PASS   tests/test_greet.py::test_greet  (pass pass)"}},
		{"test all", "", []string{"env", "test", "greet"}, 0, []string{"PASS    tests/test_greet.py::test_punctuation", "3 tests: 3 pass, 0 fail"}},
		{"test one", "", []string{"env", "test", "greet", "tests/test_greet.py::test_greet", "--quiet"}, 0, []string{"1 tests: 1 pass"}},
		{"test missing", "", []string{"env", "test", "greet", "tests/test_greet.py::test_greet", "tests/test_greet.py::test_nope"}, 1, []string{"MISSING tests/test_greet.py::test_nope", "1 missing"}},
		{"coverage", "", []string{"env", "coverage", "greet"}, 0, []string{"src/greet/__init__.py:1 greet", "3 tests", "1 functions under 3 passing tests"}},
		{"coverage of a function", "", []string{"env", "coverage", "greet", "greet"}, 0, []string{"src/greet/__init__.py:1 greet: 3 tests", "tests/test_greet.py::test_default_name"}},
		{"coverage of a test", "", []string{"env", "coverage", "--test", "tests/test_greet.py::test_greet", "greet"}, 0, []string{"lines src/greet/__init__.py: 2-3"}},
		{"shell", "cd /repo && git status --porcelain && git log --format=%s && echo venv=$VIRTUAL_ENV && rm -rf /repo/src && ls /repo", []string{"env", "shell", "greet"}, 0, []string{"snapshot\nvenv=/venv\n"}},
		{"shell left no trace", "ls /repo/src", []string{"env", "shell", "greet"}, 0, []string{"greet"}},
		{"unknown env", "", []string{"env", "show", "nope"}, 1, []string{`no environment "nope"`}},
		{"bad path", "", []string{"env", "build", "/no/such/dir"}, 1, []string{"repository /no/such/dir: no such directory"}},
		{"no args", "", []string{"env", "test"}, 2, []string{"want an environment id or name"}},
		{"gc", "", []string{"env", "gc"}, 0, []string{"removed "}},
		{"ls after gc", "", []string{"env", "ls"}, 0, []string{"greet"}},
		{"rm", "", []string{"env", "rm", "greet"}, 0, []string{"removed " + id}},
		{"show removed", "", []string{"env", "show", id}, 1, []string{"no environment"}},
	}
	for _, st := range steps {
		code, out, errOut := runCLI(t, st.stdin, st.args...)
		all := out + errOut
		if code != st.code {
			t.Errorf("%s: cwm %s = %d, want %d\n%s", st.name, strings.Join(st.args, " "), code, st.code, all)
			continue
		}
		for _, w := range st.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: cwm %s output lacks %q:\n%s", st.name, strings.Join(st.args, " "), w, all)
			}
		}
		if (st.name == "ls after gc" || st.name == "ls") && strings.Contains(all, "allfail") {
			t.Errorf("env gc kept the unusable environment:\n%s", all)
		}
	}
}

func TestEnvJSON(t *testing.T) {
	t.Setenv("CWM_HOME", t.TempDir())
	code, out, errOut := runCLI(t, "", "env", "build", "--offline", "--json", "--runs", "1", "--no-coverage", "../envbuild/testdata/bareunit")
	if code != 0 {
		t.Fatalf("env build --json = %d: %s", code, errOut)
	}
	var m struct {
		ID     string `json:"id"`
		Usable bool   `json:"usable"`
		Counts struct {
			Tests, Pass, Skip int
		} `json:"counts"`
		TestCommand struct {
			Framework string `json:"framework"`
		} `json:"test_command"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("env build --json printed %q: %v", out, err)
	}
	if !m.Usable || m.Counts.Tests != 5 || m.Counts.Skip != 1 || m.TestCommand.Framework != "unittest" {
		t.Errorf("env build --json = %+v", m)
	}
	code, out, _ = runCLI(t, "", "env", "test", "--json", m.ID, "test_shapes.CircleTest.test_unit")
	var r struct {
		Tests []struct{ ID, Outcome string } `json:"tests"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.Tests) != 1 || r.Tests[0].Outcome != "pass" {
		t.Errorf("env test --json = %d, %s", code, out)
	}
	// The map is computed on first use when the build skipped it.
	code, out, errOut = runCLI(t, "", "env", "coverage", m.ID, "circle_area")
	if code != 0 || !strings.Contains(out, "shapes/__init__.py:4 circle_area: 2 tests") {
		t.Errorf("env coverage = %d, %s %s", code, out, errOut)
	}
}
