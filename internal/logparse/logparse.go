// Package logparse reads test outcomes out of a test run's log the way
// the SWE-bench family's harnesses do: Go ports of swebench 5.0.2's Python
// log parsers (harness/log_parsers/python.py), by the names the datasets
// give them (a row's log_parser, SWE-rebench V2's install_config), so that
// a task imported from a dataset is graded on the same test ids, with the
// same quirks, as its own harness would grade it. Each port is checked
// against the Python original on the same logs (logparse_test.go).
package logparse

import (
	"sort"
	"strings"
	"unicode"

	"cwm/internal/errkind"
	"cwm/internal/lazyre"
)

// Statuses a parser gives, SWE-bench's TestStatus values.
const (
	Failed  = "FAILED"
	Passed  = "PASSED"
	Skipped = "SKIPPED"
	Error   = "ERROR"
	XFail   = "XFAIL"
)

// statuses are TestStatus in its declaration order: a line that starts
// with one of them is a pytest result line.
var statuses = []string{Failed, Passed, Skipped, Error, XFail}

// Parser maps a log to each test id's status.
type Parser func(log string) map[string]string

// parsers are swebench's PARSER_REGISTRY, its Python part.
var parsers = map[string]Parser{
	"parse_log_pytest":         Pytest,
	"parse_log_pytest_options": PytestOptions,
	"parse_log_django":         Django,
	"parse_log_pytest_v2":      PytestV2,
	"parse_log_seaborn":        Seaborn,
	"parse_log_sympy":          Sympy,
	"parse_log_matplotlib":     Matplotlib,
	"parse_log_astroid":        Pytest,
	"parse_log_flask":          Pytest,
	"parse_log_marshmallow":    Pytest,
	"parse_log_pvlib":          Pytest,
	"parse_log_pyvista":        Pytest,
	"parse_log_sqlfluff":       Pytest,
	"parse_log_xarray":         Pytest,
	"parse_log_pydicom":        PytestOptions,
	"parse_log_requests":       PytestOptions,
	"parse_log_pylint":         PytestOptions,
	"parse_log_astropy":        PytestV2,
	"parse_log_scikit":         PytestV2,
	"parse_log_sphinx":         PytestV2,
}

// byRepo is swebench's MAP_REPO_TO_PARSER_PY: the parser of each of
// SWE-bench's repositories, for rows that do not name one.
var byRepo = map[string]string{
	"astropy/astropy":              "parse_log_astropy",
	"django/django":                "parse_log_django",
	"marshmallow-code/marshmallow": "parse_log_marshmallow",
	"matplotlib/matplotlib":        "parse_log_matplotlib",
	"mwaskom/seaborn":              "parse_log_seaborn",
	"pallets/flask":                "parse_log_flask",
	"psf/requests":                 "parse_log_requests",
	"pvlib/pvlib-python":           "parse_log_pvlib",
	"pydata/xarray":                "parse_log_xarray",
	"pydicom/pydicom":              "parse_log_pydicom",
	"pylint-dev/astroid":           "parse_log_astroid",
	"pylint-dev/pylint":            "parse_log_pylint",
	"pytest-dev/pytest":            "parse_log_pytest",
	"pyvista/pyvista":              "parse_log_pyvista",
	"scikit-learn/scikit-learn":    "parse_log_scikit",
	"sqlfluff/sqlfluff":            "parse_log_sqlfluff",
	"sphinx-doc/sphinx":            "parse_log_sphinx",
	"sympy/sympy":                  "parse_log_sympy",
}

// Get returns the parser named name (as in swebench's PARSER_REGISTRY); an
// unknown name is an input error listing the known ones.
func Get(name string) (Parser, error) {
	if p, ok := parsers[name]; ok {
		return p, nil
	}
	return nil, errkind.Errorf(errkind.Input, "unknown log parser %q (known: %s)", name, strings.Join(Names(), ", "))
}

// ForRepo is the name of the parser SWE-bench uses for repo
// ("django/django"), and whether it has one.
func ForRepo(repo string) (string, bool) {
	n, ok := byRepo[repo]
	return n, ok
}

// Names lists the known parsers, sorted.
func Names() []string {
	out := make([]string, 0, len(parsers))
	for n := range parsers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// isSpace is Python's str.isspace: Go's unicode.IsSpace and the four
// information separators, which Python's str.split also splits on.
func isSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// fields is Python's str.split() with no argument.
func fields(s string) []string { return strings.FieldsFunc(s, isSpace) }

// strip is Python's str.strip() with no argument.
func strip(s string) string { return strings.TrimFunc(s, isSpace) }

func startsWithStatus(line string) bool {
	for _, s := range statuses {
		if strings.HasPrefix(line, s) {
			return true
		}
	}
	return false
}

func endsWithStatus(line string) bool {
	for _, s := range statuses {
		if strings.HasSuffix(line, s) {
			return true
		}
	}
	return false
}

// Python's \d is any Unicode decimal digit.
var skipCount = lazyre.New(`^\[\p{Nd}+\]$`)

// isSkipSummary is true for pytest's "SKIPPED [N] path:line: reason"
// summary, where [N] is not a test.
func isSkipSummary(status, name string) bool {
	return status == Skipped && skipCount().MatchString(name)
}
