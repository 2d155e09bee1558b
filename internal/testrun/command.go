package testrun

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// Framework names the test runner behind a command, which decides how
// cwm asks it for per-test results.
type Framework string

const (
	// Pytest commands write a JUnit XML report (--junitxml).
	Pytest Framework = "pytest"
	// Unittest commands are run verbose and their stderr is parsed.
	Unittest Framework = "unittest"
	// Shell commands are anything else (tox, make, a script): run with
	// bash as written, with PYTEST_ADDOPTS asking any pytest they start
	// for a JUnit report. Without one the whole command is one test.
	Shell Framework = "shell"
)

// Command is a test command taken apart: which runner, in which
// directory, with which arguments.
type Command struct {
	Framework Framework `json:"framework"`
	// Dir is the working directory, relative to the sandbox's workdir
	// ("" for the workdir itself), from a leading "cd DIR &&".
	Dir string `json:"dir,omitempty"`
	// Env holds KEY=VALUE assignments that prefixed the command.
	Env []string `json:"env,omitempty"`
	// Args are the runner's own arguments: for pytest what follows
	// "python -m pytest", for unittest what follows "python -m unittest".
	Args []string `json:"args,omitempty"`
	// Line is the command line as given, run by bash for Shell.
	Line string `json:"line"`
	// Dropped lists arguments removed because they need plugins that are
	// not installed or would hide outcomes (coverage, xdist, -x, reruns).
	Dropped []string `json:"dropped,omitempty"`
}

// String is the command as cwm runs it (without the reporting options it
// adds).
func (c Command) String() string {
	var words []string
	if c.Dir != "" {
		words = append(words, "cd", c.Dir, "&&")
	}
	words = append(words, c.Env...)
	switch c.Framework {
	case Pytest:
		words = append(words, "python", "-m", "pytest")
	case Unittest:
		words = append(words, "python", "-m", "unittest")
	default:
		return c.Line
	}
	q := make([]string, 0, len(words)+len(c.Args))
	for _, w := range words {
		if w == "&&" {
			q = append(q, w)
		} else {
			q = append(q, quoteWord(w))
		}
	}
	for _, a := range c.Args {
		q = append(q, quoteWord(a))
	}
	return strings.Join(q, " ")
}

// Parse recognises a test command line: pytest (pytest, py.test, python -m
// pytest, coverage run -m pytest), unittest (python -m unittest ...), or
// anything else as a Shell command.
func Parse(line string) (Command, error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return Command{}, fmt.Errorf("empty test command")
	}
	c := Command{Framework: Shell, Line: line}
	cmds, complex, err := splitWords(line)
	if err != nil {
		return Command{}, err
	}
	if complex || len(cmds) == 0 || len(cmds) > 2 {
		return c, nil
	}
	words := cmds[0]
	if len(cmds) == 2 {
		// Only "cd DIR && CMD" is taken apart.
		if len(words) != 2 || words[0] != "cd" || !strings.Contains(line, "&&") {
			return c, nil
		}
		c.Dir = path.Clean(words[1])
		if path.IsAbs(c.Dir) {
			return Command{Framework: Shell, Line: line}, nil
		}
		words = cmds[1]
	}
	for len(words) > 0 && isAssignment(words[0]) {
		c.Env = append(c.Env, words[0])
		words = words[1:]
	}
	fw, rest := runnerOf(words)
	switch fw {
	case Pytest:
		c.Framework = Pytest
		c.Args, c.Dropped = filterPytestArgs(rest)
	case Unittest:
		c.Framework = Unittest
		c.Args = rest
	default:
		return Command{Framework: Shell, Line: line}, nil
	}
	return c, nil
}

func isAssignment(w string) bool {
	k, _, ok := strings.Cut(w, "=")
	if !ok || k == "" {
		return false
	}
	for i, r := range k {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// isPython reports whether an executable name is a Python interpreter
// (python, python3, python3.12, /usr/bin/python3, .venv/bin/python).
func isPython(w string) bool {
	b := path.Base(w)
	if !strings.HasPrefix(b, "python") {
		return false
	}
	v := strings.TrimPrefix(b, "python")
	return strings.Trim(v, "0123456789.") == ""
}

// runnerOf finds which runner a simple command starts and returns the
// runner's own arguments.
func runnerOf(words []string) (Framework, []string) {
	if len(words) == 0 {
		return Shell, nil
	}
	switch b := path.Base(words[0]); {
	case b == "pytest" || b == "py.test" || strings.HasPrefix(b, "pytest-") || strings.HasPrefix(b, "py.test-"):
		return Pytest, words[1:]
	case b == "coverage" || b == "python-coverage":
		// coverage run [opts] -m pytest|unittest ARGS
		for i := 1; i+1 < len(words); i++ {
			if words[i] == "-m" {
				return moduleRunner(words[i+1], words[i+2:])
			}
		}
		return Shell, nil
	case isPython(words[0]):
		for i := 1; i < len(words); i++ {
			w := words[i]
			switch {
			case w == "-m" && i+1 < len(words):
				return moduleRunner(words[i+1], words[i+2:])
			case strings.HasPrefix(w, "-m") && len(w) > 2:
				return moduleRunner(w[2:], words[i+1:])
			case w == "-W" || w == "-X":
				i++ // takes a value
			case strings.HasPrefix(w, "-"):
				// Interpreter flags (-u, -B, -bb) do not matter here.
			case path.Base(w) == "setup.py" && i+1 < len(words) && words[i+1] == "test":
				// setup.py test is gone from setuptools; pytest runs
				// the same unittest and pytest suites.
				return Pytest, nil
			default:
				return Shell, nil // a script
			}
		}
	}
	return Shell, nil
}

func moduleRunner(mod string, args []string) (Framework, []string) {
	switch mod {
	case "coverage":
		// python -m coverage run [opts] -m pytest|unittest ARGS
		if len(args) > 0 && args[0] == "run" {
			return runnerOf(append([]string{"coverage"}, args...))
		}
	case "pytest", "py.test":
		return Pytest, args
	case "unittest":
		return Unittest, args
	}
	return Shell, nil
}

// pytestValueOpts are pytest options whose value is the next word, so
// that the value is not mistaken for a test path.
var pytestValueOpts = map[string]bool{
	"-k": true, "-m": true, "-p": true, "-W": true, "-c": true, "-o": true, "-r": true,
	"--rootdir": true, "--confcutdir": true, "--ignore": true, "--ignore-glob": true,
	"--deselect": true, "--tb": true, "--durations": true, "--durations-min": true,
	"--basetemp": true, "--import-mode": true, "--log-level": true, "--log-cli-level": true,
	"--log-file": true, "--log-format": true, "--capture": true, "--color": true,
	"--override-ini": true, "--config-file": true, "--pythonwarnings": true,
	"--junit-prefix": true, "--doctest-glob": true, "--verbosity": true,
}

// droppedPytest are options cwm removes, with whether they take a value:
// coverage and parallelism need plugins the environment may lack and
// change no outcome; stopping early, reruns and last-failed selection
// would hide or fake outcomes; cwm writes its own JUnit report.
var droppedPytest = map[string]bool{
	"-x": false, "--exitfirst": false, "--maxfail": true, "--lf": false, "--last-failed": false,
	"--ff": false, "--failed-first": false, "--sw": false, "--stepwise": false,
	"-n": true, "--numprocesses": true, "--dist": true, "--reruns": true, "--reruns-delay": true,
	"--junitxml": true, "--junit-xml": true, "--timeout": true, "--cov": false,
	"--cov-report": true, "--cov-config": true, "--cov-fail-under": true, "--cov-append": false,
	"--cov-branch": false, "--no-cov": false, "--no-cov-on-fail": false, "--cov-context": true,
	"--cov-reset": false, "--pdb": false, "--trace": false,
	"--benchmark-skip": false, "--benchmark-only": false, "--benchmark-disable": false,
	// Linters and type checkers run as pytest plugins: their items check
	// the code's style or types, not its behaviour, and the plugin is
	// seldom installed (a usage error stops the run).
	"--mypy": false, "--mypy-ini-file": true, "--mypy-config-file": true, "--mypy-pyproject-toml-file": true,
	"--mypy-ignore-missing-imports": false, "--flake8": false, "--pylint": false, "--pycodestyle": false,
	"--black": false, "--isort": false, "--ruff": false, "--ruff-format": false,
}

// dropSpec is droppedPytest for cwm's pytest plugin, which drops the same
// options from addopts and PYTEST_ADDOPTS (CWM_DROP_PYTEST in
// cwmreport.py). --junitxml is left out: cwm's own report is one.
var dropSpec = func() string {
	var words []string
	for name, takesValue := range droppedPytest {
		if name == "--junitxml" || name == "--junit-xml" {
			continue
		}
		v := "0"
		if takesValue {
			v = "1"
		}
		words = append(words, name+"="+v)
	}
	sort.Strings(words)
	return strings.Join(append(words, "--cov*"), " ")
}()

// gluedWorkers reports whether a is xdist's -n with its value in the same
// word: a number, or auto and logical, its two named counts (mypy's
// addopts hold -nauto).
func gluedWorkers(a string) bool {
	if !strings.HasPrefix(a, "-n") || len(a) == 2 {
		return false
	}
	v := a[2:]
	return strings.Trim(v, "0123456789") == "" || v == "auto" || v == "logical"
}

func filterPytestArgs(args []string) (kept, dropped []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(a, "=")
		if takesValue, ok := droppedPytest[name]; ok || strings.HasPrefix(name, "--cov") {
			dropped = append(dropped, a)
			// --cov's value is optional: like pytest-cov's parser, it
			// takes the next word unless that is an option.
			optional := name == "--cov" && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-")
			if (takesValue || optional) && !hasValue && i+1 < len(args) {
				i++
				dropped = append(dropped, args[i])
			}
			continue
		}
		// -n4, -nauto, --maxfail=2 style.
		if gluedWorkers(a) {
			dropped = append(dropped, a)
			continue
		}
		kept = append(kept, a)
	}
	return kept, dropped
}

// pytestOptions returns the options of args without the test paths (the
// positional arguments), for running a chosen subset instead. Selection
// by -k and -m goes too: the chosen ids are the selection.
func pytestOptions(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		if a == "-k" || a == "-m" {
			i++
			continue
		}
		if strings.HasPrefix(a, "-k") || strings.HasPrefix(a, "-m") {
			continue
		}
		out = append(out, a)
		if pytestValueOpts[a] && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// unittestLayout describes a unittest command: whether it discovers, and
// the directory test ids are relative to.
type unittestLayout struct {
	discover bool
	start    string // start directory of discovery
	top      string // top-level directory: ids are module paths from here
	options  []string
	pattern  string
	names    []string // modules, classes or tests named without discover
}

func parseUnittestArgs(args []string) unittestLayout {
	l := unittestLayout{start: ".", pattern: ""}
	rest := args
	if len(rest) == 0 {
		l.discover = true
	} else if rest[0] == "discover" {
		l.discover = true
		rest = rest[1:]
	}
	var pos []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch a {
		case "-s", "--start-directory":
			if i+1 < len(rest) {
				i++
				l.start = rest[i]
			}
		case "-t", "--top-level-directory":
			if i+1 < len(rest) {
				i++
				l.top = rest[i]
			}
		case "-p", "--pattern":
			if i+1 < len(rest) {
				i++
				l.pattern = rest[i]
			}
		case "-k":
			i++ // selection is replaced by the chosen ids
		case "-v", "--verbose", "-q", "--quiet":
		case "-f", "--failfast":
		case "-b", "--buffer", "-c", "--catch", "--locals":
			l.options = append(l.options, a)
		default:
			if strings.HasPrefix(a, "-") {
				l.options = append(l.options, a)
			} else {
				pos = append(pos, a)
			}
		}
	}
	if l.discover {
		// discover [start [pattern [top]]]
		if len(pos) > 0 {
			l.start = pos[0]
		}
		if len(pos) > 1 {
			l.pattern = pos[1]
		}
		if len(pos) > 2 {
			l.top = pos[2]
		}
	} else {
		l.names = pos
	}
	if l.top == "" {
		l.top = l.start
		if !l.discover {
			l.top = "."
		}
	}
	return l
}
