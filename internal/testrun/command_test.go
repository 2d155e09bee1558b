package testrun

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParse(t *testing.T) {
	tests := []struct {
		line string
		want Command
	}{
		{"pytest", Command{Framework: Pytest}},
		{"pytest -q tests/", Command{Framework: Pytest, Args: []string{"-q", "tests/"}}},
		{"python -m pytest -x --cov=pkg --cov-report term -n 4 tests",
			Command{Framework: Pytest, Args: []string{"tests"}, Dropped: []string{"-x", "--cov=pkg", "--cov-report", "term", "-n", "4"}}},
		{"python3.12 -W error -m pytest -k 'not slow'", Command{Framework: Pytest, Args: []string{"-k", "not slow"}}},
		{"py.test -n4", Command{Framework: Pytest, Dropped: []string{"-n4"}}},
		{"pytest -nauto -q -nlogical -nx", Command{Framework: Pytest, Args: []string{"-q", "-nx"}, Dropped: []string{"-nauto", "-nlogical"}}},
		{"python -m pytest --cov humanize --cov tests --cov-context test --no-cov-on-fail --cov-report html -q",
			Command{Framework: Pytest, Args: []string{"-q"}, Dropped: []string{"--cov", "humanize", "--cov", "tests", "--cov-context", "test", "--no-cov-on-fail", "--cov-report", "html"}}},
		{"pytest --cov -q tests", Command{Framework: Pytest, Args: []string{"-q", "tests"}, Dropped: []string{"--cov"}}},
		{"coverage run --branch -m pytest tests", Command{Framework: Pytest, Args: []string{"tests"}}},
		{"python -We -m coverage run -m unittest test_x.py", Command{Framework: Unittest, Args: []string{"test_x.py"}}},
		{"cd src && PYTHONHASHSEED=0 pytest", Command{Framework: Pytest, Dir: "src", Env: []string{"PYTHONHASHSEED=0"}}},
		{"python -m unittest discover -s tests -v", Command{Framework: Unittest, Args: []string{"discover", "-s", "tests", "-v"}}},
		{"python -munittest", Command{Framework: Unittest}},
		{"python setup.py test", Command{Framework: Pytest}},
		{"tox -e py311", Command{Framework: Shell}},
		{"make test", Command{Framework: Shell}},
		{"pytest tests/*.py", Command{Framework: Shell}},
		{"pytest | tee log", Command{Framework: Shell}},
		{"python runtests.py", Command{Framework: Shell}},
		{"cd /abs && pytest", Command{Framework: Shell}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.line)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.line, err)
			continue
		}
		tt.want.Line = tt.line
		if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.line, diff)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, line := range []string{"", "   ", "pytest 'unterminated", `pytest "also`} {
		if _, err := Parse(line); err == nil {
			t.Errorf("Parse(%q) = nil error, want one", line)
		}
	}
}

func TestInvocation(t *testing.T) {
	const junit = "/tmp/j.xml"
	tests := []struct {
		line    string
		opts    Options
		argv    []string
		dir     string
		env     []string
		wantErr bool
	}{
		{
			line: "pytest -q tests", opts: Options{Python: "py"},
			argv: []string{"py", "-m", "pytest", "-p", "no:cacheprovider", "-p", "cwmreport", "--junitxml=" + junit, "-o", "junit_family=xunit1", "--continue-on-collection-errors", "-W", configWarnings, "-q", "tests"},
			dir:  "/repo",
		},
		{
			line: "pytest -q -k slow -p myplugin tests", opts: Options{Python: "py", IDs: []string{"tests/test_a.py::test_x"}},
			argv: []string{"py", "-m", "pytest", "-p", "no:cacheprovider", "-p", "cwmreport", "--junitxml=" + junit, "-o", "junit_family=xunit1", "--continue-on-collection-errors", "-W", configWarnings, "-q", "-p", "myplugin", "tests/test_a.py::test_x"},
			dir:  "/repo",
		},
		{
			line: "python -m unittest discover -s tests -p 'check_*.py'", opts: Options{Python: "py", PythonVersion: "3.11.2"},
			argv: []string{"py", "-m", "unittest", "discover", "-v", "-s", "tests", "-t", "tests", "-p", "check_*.py"},
			dir:  "/repo",
		},
		{
			line: "python -m unittest discover tests", opts: Options{Python: "py", PythonVersion: "3.12.1"},
			argv: []string{"py", "-m", "unittest", "discover", "-v", "--durations", "0", "-s", "tests", "-t", "tests"},
			dir:  "/repo",
		},
		{
			line: "cd sub && python -m unittest discover -s tests", opts: Options{Python: "py", IDs: []string{"test_m.C.test_x"}},
			argv: []string{"py", "-m", PertestModule, "-v", "test_m.C.test_x"},
			dir:  "/repo/sub/tests", env: []string{"PYTHONPATH=/repo/sub", "CWM_UNITTEST_DISCOVER=/repo/sub/tests\ntest*.py\n/repo/sub/tests"},
		},
		{
			line: "python -m unittest -f tests.test_m", opts: Options{Python: "py"},
			argv: []string{"py", "-m", "unittest", "-v", "tests.test_m"},
			dir:  "/repo",
		},
		{
			line: "make test", opts: Options{},
			argv: []string{"/bin/bash", "-c", "make test"},
			dir:  "/repo", env: []string{"PYTEST_ADDOPTS=--junitxml=" + junit + " -o junit_family=xunit1 -p no:cacheprovider -p cwmreport --continue-on-collection-errors -W " + configWarnings},
		},
		{line: "make test", opts: Options{IDs: []string{"x"}}, wantErr: true},
	}
	for _, tt := range tests {
		c, err := Parse(tt.line)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.line, err)
		}
		inv, err := c.invocation(tt.opts, junit, "/repo")
		if tt.wantErr {
			if err == nil {
				t.Errorf("invocation(%q, %+v) = nil error, want one", tt.line, tt.opts)
			}
			continue
		}
		if err != nil {
			t.Errorf("invocation(%q): %v", tt.line, err)
			continue
		}
		if diff := cmp.Diff(tt.argv, inv.argv); diff != "" {
			t.Errorf("invocation(%q).argv mismatch (-want +got):\n%s", tt.line, diff)
		}
		if inv.dir != tt.dir {
			t.Errorf("invocation(%q).dir = %q, want %q", tt.line, inv.dir, tt.dir)
		}
		if diff := cmp.Diff(tt.env, inv.env, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("invocation(%q).env mismatch (-want +got):\n%s", tt.line, diff)
		}
	}
}

func TestSplitWords(t *testing.T) {
	tests := []struct {
		line    string
		want    [][]string
		complex bool
	}{
		{`a "b c" 'd e' f\ g`, [][]string{{"a", "b c", "d e", "f g"}}, false},
		{"a && b; c", [][]string{{"a"}, {"b"}, {"c"}}, false},
		{"a \\\n  b # comment", [][]string{{"a", "b"}}, false},
		{"echo $HOME", [][]string{{"echo", "$HOME"}}, true},
		{"a > out", [][]string{{"a", ">", "out"}}, true},
	}
	for _, tt := range tests {
		got, complex, err := splitWords(tt.line)
		if err != nil {
			t.Errorf("splitWords(%q): %v", tt.line, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" || complex != tt.complex {
			t.Errorf("splitWords(%q) = %q, %v; want %q, %v", tt.line, got, complex, tt.want, tt.complex)
		}
	}
}
