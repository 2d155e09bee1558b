package testrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/sandbox"
	"cwm/internal/testtime"
)

const python = "/usr/bin/python3"

// repoSandbox starts a sandbox whose /repo is a copy of testdata/name.
func repoSandbox(t *testing.T, name string) *sandbox.Sandbox {
	t.Helper()
	layer := t.TempDir()
	if err := os.CopyFS(filepath.Join(layer, "repo"), os.DirFS(filepath.Join("testdata", name))); err != nil {
		t.Fatal(err)
	}
	return layerSandbox(t, layer)
}

// layerSandbox starts a sandbox on layer (its repo/ is /repo).
func layerSandbox(t *testing.T, layer string) *sandbox.Sandbox {
	t.Helper()
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: t.TempDir(), Warm: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	s, err := rt.New(context.Background(), sandbox.Config{
		Layers: []string{layer}, Workdir: "/repo",
		Env:    []string{"PYTHONDONTWRITEBYTECODE=1"},
		Limits: sandbox.Limits{Timeout: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func outcomes(tests []Test) map[string]Outcome {
	m := map[string]Outcome{}
	for _, t := range tests {
		m[t.ID] = t.Outcome
	}
	return m
}

func TestRunPytest(t *testing.T) {
	s := repoSandbox(t, "mixed")
	ctx := context.Background()
	all := map[string]Outcome{
		"tests/test_a.py::TestX::TestInner::test_deep": Pass,
		"tests/test_a.py::TestX::test_p[a.b]":          Pass,
		"tests/test_a.py::TestX::test_p[c::d]":         Pass,
		"tests/test_a.py::TestX::test_p[3]":            Fail,
		"tests/test_a.py::test_skip":                   Skip,
		"tests/test_a.py::test_xfail":                  Skip,
		"tests/test_a.py::test_setup_error":            Error,
		"tests/test_a.py::test_fail_and_teardown":      Fail,
		"tests/test_a.py::test_pass_then_teardown":     Error,
		"tests/test_b.py::test_ok":                     Pass,
		"tests/test_b.py::Legacy::test_legacy":         Pass,
		"tests/test_broken.py":                         Error,
	}
	tests := []struct {
		name string
		line string
		ids  []string
		want map[string]Outcome
	}{
		{"all", "python -m pytest -q -x", nil, all},
		{"shell", "cd . && pytest tests | cat", nil, all},
		{"subset", "pytest -q -k nothing_matches tests", []string{"tests/test_a.py::TestX::test_p[c::d]", "tests/test_b.py::Legacy::test_legacy", "tests/test_broken.py"},
			map[string]Outcome{"tests/test_a.py::TestX::test_p[c::d]": Pass, "tests/test_b.py::Legacy::test_legacy": Pass, "tests/test_broken.py": Error}},
		{"unknown ids are left out", "pytest", []string{"tests/test_a.py::test_nope", "tests/test_b.py::test_ok", "tests/test_zzz.py::test_x"},
			map[string]Outcome{"tests/test_b.py::test_ok": Pass}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.line)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Run(ctx, s, c, Options{Python: python, IDs: tt.ids})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, outcomes(rep.Tests)); diff != "" {
				t.Errorf("Run(%q) outcomes mismatch (-want +got):\n%s\nstderr: %s", tt.line, diff, rep.Result.Stderr)
			}
			if tt.name == "all" && !strings.Contains(string(rep.Result.Stdout), "to stdout") {
				t.Errorf("Run(%q) stdout lacks the test's own output:\n%s", tt.line, rep.Result.Stdout)
			}
		})
	}
}

func TestRunUnittest(t *testing.T) {
	s := repoSandbox(t, "unit")
	ctx := context.Background()
	all := map[string]Outcome{
		"test_unit.Doubling.test_ok":               Pass,
		"test_unit.Doubling.test_doc":              Pass,
		"test_unit.Doubling.test_skipped":          Skip,
		"test_unit.Doubling.test_fail":             Fail,
		"test_unit.Doubling.test_error":            Error,
		"test_unit.Doubling.test_expected_failure": Skip,
		"test_unit.Doubling.test_subtests":         Fail,
		"test_unit.BrokenSetup":                    Error,
		"test_broken":                              Error,
	}
	tests := []struct {
		name string
		ids  []string
		want map[string]Outcome
	}{
		{"all", nil, all},
		{"subset", []string{"test_unit.Doubling.test_ok", "test_unit.Doubling.test_skipped", "test_broken"},
			map[string]Outcome{"test_unit.Doubling.test_ok": Pass, "test_unit.Doubling.test_skipped": Skip, "test_broken": Error}},
	}
	c, err := Parse("python -m unittest discover -s tests")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Run(ctx, s, c, Options{Python: python, IDs: tt.ids})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, outcomes(rep.Tests)); diff != "" {
				t.Errorf("Run outcomes mismatch (-want +got):\n%s\nstderr: %s", diff, rep.Result.Stderr)
			}
			if rep.Note != "" {
				t.Errorf("Run note = %q, want none", rep.Note)
			}
		})
	}
}

func TestRunLimits(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		repo   string
		line   string
		opts   Options
		reason sandbox.Reason
		want   map[string]Outcome
	}{
		{"mixed", "python3 -c 'import time; time.sleep(60)'", Options{Timeout: time.Second}, sandbox.ReasonTimeout, map[string]Outcome{}},
		{"mixed", "yes", Options{OutputLimit: 1 << 20}, sandbox.ReasonOutput, map[string]Outcome{}},
		// pytest writes no JUnit report when killed, nor after its working
		// directory is gone: the per-test stream still tells what ran.
		{"hang", "python -m pytest", Options{Python: python, Timeout: testtime.Scale(5 * time.Second)}, sandbox.ReasonTimeout,
			map[string]Outcome{"tests/test_hang.py::test_quick": Pass, "tests/test_hang.py::test_remove_own_tree": Pass, "tests/test_hang.py::test_forever": Error}},
	}
	for _, tt := range tests {
		s := repoSandbox(t, tt.repo)
		c, err := Parse(tt.line)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		rep, err := Run(ctx, s, c, tt.opts)
		if err != nil {
			t.Fatalf("Run(%q): %v", tt.line, err)
		}
		if rep.Result.Reason != tt.reason || rep.Note == "" {
			t.Errorf("Run(%q) = reason %q, note %q; want reason %q and a note", tt.line, rep.Result.Reason, rep.Note, tt.reason)
		}
		if diff := cmp.Diff(tt.want, outcomes(rep.Tests)); diff != "" {
			t.Errorf("Run(%q) outcomes mismatch (-want +got):\n%s", tt.line, diff)
		}
		if d := time.Since(start); d > testtime.Scale(20*time.Second) {
			t.Errorf("Run(%q) took %v", tt.line, d)
		}
	}
}

// TestRunPytestStops runs pytest where it stops before running a test:
// the note quotes the line that says why, not the last one; and where the
// options that stopped it (plugins absent here) come from the
// configuration's addopts or a shell command, which cwm drops as it drops
// them from a command line it parses.
func TestRunPytestStops(t *testing.T) {
	layer := t.TempDir()
	files := map[string]string{
		"repo/ok/pytest.ini":      "[pytest]\naddopts = --mypy --mypy-pyproject-toml-file pyproject.toml --cov=ok --cov-report term -n 2 -x\n",
		"repo/ok/test_ok.py":      "def test_ok():\n    pass\n",
		"repo/pyp/pyproject.toml": "[tool.pytest.ini_options]\naddopts = [\"--flake8\", \"--cov\", \"pyp\", \"-nauto\"]\n",
		"repo/pyp/test_ok.py":     "def test_ok():\n    pass\n",
		"repo/usage/tox.ini":      "[pytest]\naddopts = --no-such-plugin-option\n",
		"repo/usage/test_ok.py":   "def test_ok():\n    pass\n",
		"repo/empty/pytest.ini":   "[pytest]\n",
	}
	for name, body := range files {
		p := filepath.Join(layer, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := layerSandbox(t, layer)
	cases := []struct {
		name, line string
		want       map[string]Outcome
		note       string // a substring of the report's note; "" for none
	}{
		{"addopts in an ini file", "cd ok && python -m pytest", map[string]Outcome{"test_ok.py::test_ok": Pass}, ""},
		{"addopts in pyproject", "cd pyp && pytest", map[string]Outcome{"test_ok.py::test_ok": Pass}, ""},
		{"a shell command's own options", "cd pyp && pytest --mypy --cov-report=term test_ok.py | cat", map[string]Outcome{"test_ok.py::test_ok": Pass}, ""},
		{"usage error", "cd usage && pytest", map[string]Outcome{}, "unrecognized arguments: --no-such-plugin-option"},
		{"usage error on the command line", "pytest --no-such-option-here usage", map[string]Outcome{}, "error: unrecognized arguments: --no-such-plugin-option --no-such-option-here"},
		{"nothing collected", "cd empty && pytest", map[string]Outcome{}, "exit status 5: no tests were collected"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.line)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Run(context.Background(), s, c, Options{Python: python})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, outcomes(rep.Tests)); diff != "" {
				t.Errorf("Run(%q) outcomes mismatch (-want +got):\n%s\nnote %q\nstderr: %s", tt.line, diff, rep.Note, rep.Result.Stderr)
			}
			if tt.note == "" && rep.Note != "" || !strings.Contains(rep.Note, tt.note) {
				t.Errorf("Run(%q) note = %q, want one with %q", tt.line, rep.Note, tt.note)
			}
		})
	}
}

// TestRunKeepsOwnOptions: options cwm adds to a pytest command line
// (--maxfail for a regression run) are not dropped as the configuration's
// are: the run stops at its first failure.
func TestRunKeepsOwnOptions(t *testing.T) {
	s := repoSandbox(t, "mixed")
	c, err := Parse("pytest tests")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), s, c, Options{Python: python, PytestArgs: []string{"--maxfail=1"}})
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, tt := range rep.Tests {
		if tt.Outcome == Fail || tt.Outcome == Error {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("--maxfail=1: %d tests failed or errored, want the run stopped at the first: %v", failed, outcomes(rep.Tests))
	}
}

// TestPytestCause: the line that says why pytest stopped, whatever name
// its usage gives the program (pytest 9 run as python -m pytest says
// "python -m pytest: error:"; mypy's build quoted "rootdir: /repo").
func TestPytestCause(t *testing.T) {
	tests := []struct{ out, want string }{
		{"ERROR: usage: python -m pytest [options] [file_or_dir] [file_or_dir] [...]\npython -m pytest: error: unrecognized arguments: -nauto\n  inifile: /repo/pyproject.toml\n  rootdir: /repo\n",
			": python -m pytest: error: unrecognized arguments: -nauto"},
		{"ERROR: usage: __main__.py [options]\n__main__.py: error: unrecognized arguments: --mypy\n  rootdir: /repo\n", ": __main__.py: error: unrecognized arguments: --mypy"},
		{"ERROR: file or directory not found: t.py\n\n", ": ERROR: file or directory not found: t.py"},
		{"collected 0 items\n  rootdir: /repo\n", ":   rootdir: /repo"},
	}
	for _, tt := range tests {
		if got := pytestCause([]byte(tt.out)); got != tt.want {
			t.Errorf("pytestCause(%q) = %q, want %q", tt.out, got, tt.want)
		}
	}
}
