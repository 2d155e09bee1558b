// Package testrun runs a repository's test command in a sandbox and
// returns the outcome of every test: pass, fail, error or skip, with its
// duration.
//
// pytest reports through cwm's reporter plugin, a stream of per-test
// records with pytest's own node ids written to a file inside the sandbox,
// and a JUnit XML file as the fallback (never through its console output,
// which tests share);
// unittest through its verbose lines on stderr and the FAIL/ERROR sections
// of its summary. Test ids are pytest node ids
// ("tests/test_a.py::TestX::test_y[param]") and unittest ids
// ("mod.Class.test_y"); both can be given back to Run to run a subset.
// A module that fails to import is one test with the outcome error, so it
// never hides the others (pytest runs with --continue-on-collection-errors).
package testrun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"cwm/internal/lazyre"
	"cwm/internal/sandbox"
)

// Outcome is how one test ended.
type Outcome string

const (
	Pass  Outcome = "pass"
	Fail  Outcome = "fail"
	Error Outcome = "error"
	Skip  Outcome = "skip"
)

// rank orders outcomes when one test is reported more than once (a
// failure in the call and an error in teardown): the worse one stands.
func (o Outcome) rank() int {
	switch o {
	case Fail:
		return 3
	case Error:
		return 2
	case Skip:
		return 1
	}
	return 0
}

// Test is the outcome of one test.
type Test struct {
	ID      string        `json:"id"`
	Outcome Outcome       `json:"outcome"`
	Time    time.Duration `json:"-"`
	// Message is the first line of the failure, error or skip message.
	Message string `json:"message,omitempty"`
}

// Options control one run.
type Options struct {
	// IDs, when set, run only these tests (ids as Run reports them).
	IDs []string
	// Timeout bounds the whole run (default: the sandbox's limit).
	Timeout time.Duration
	// OutputLimit bounds stdout and stderr together (default 64 MiB). All
	// output up to the limit is kept for parsing.
	OutputLimit int64
	// Env entries are added to the command's environment.
	Env []string
	// Python is the interpreter that runs pytest and unittest (default
	// "python", found on the sandbox's PATH).
	Python string
	// PythonVersion ("3.12") enables unittest's --durations on 3.12+.
	PythonVersion string
	// PytestArgs are added before the command's own pytest arguments
	// (for example "-p plugin").
	PytestArgs []string
	// UnittestModule replaces "unittest" in "python -m unittest" (a
	// wrapper that takes the same arguments).
	UnittestModule string
}

// Report is the result of one run.
type Report struct {
	Tests []Test `json:"tests"`
	// Argv is what ran (bash -c LINE for shell commands).
	Argv []string `json:"argv"`
	Dir  string   `json:"dir"`
	// Result is how the command ended; Stdout and Stderr hold all output
	// up to the output limit.
	Result sandbox.Result `json:"-"`
	// Note says why the per-test outcomes are missing or partial, if they
	// are: a limit, a runner that wrote no report.
	Note string `json:"note,omitempty"`
}

// defaultOutputLimit bounds a test run's output. Test suites print far
// less; a suite that prints without end is stopped with ReasonOutput.
const defaultOutputLimit = 64 << 20

// Run runs the test command c in s and returns the outcome of each test.
// The error is non-nil only when the command could not be run at all or
// its report could not be read; failing tests, limits and crashes are
// outcomes and notes in the Report.
func Run(ctx context.Context, s *sandbox.Sandbox, c Command, opts Options) (*Report, error) {
	if opts.OutputLimit <= 0 {
		opts.OutputLimit = defaultOutputLimit
	}
	if opts.Python == "" {
		opts.Python = "python"
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	junit := pluginDir + "/junit-" + hex.EncodeToString(rnd[:]) + ".xml"
	stream := pluginDir + "/report-" + hex.EncodeToString(rnd[:]) + ".jsonl"
	if c.Framework != Unittest || len(opts.IDs) > 0 && opts.UnittestModule == "" {
		if err := installPlugin(ctx, s); err != nil {
			return nil, err
		}
	}
	var rep *Report
	var res sandbox.Result
	for {
		inv, err := c.invocation(opts, junit, s.Config().Workdir)
		if err != nil {
			return nil, err
		}
		rep = &Report{Argv: inv.argv, Dir: inv.dir}
		env := append(append([]string{}, opts.Env...), inv.env...)
		if c.Framework == Unittest {
			dir := ""
			if len(opts.IDs) > 0 && opts.UnittestModule == "" {
				dir = pluginDir // the id-aware unittest command line
			}
			env = withPythonPath(env, dir)
		} else {
			env = append(withPythonPath(env, pluginDir), "CWM_REPORT="+stream, "CWM_DROP_PYTEST="+dropSpec)
			if c.Framework == Shell {
				env = append(env, "CWM_DROP_PYTEST_ALL=1") // the repository's command line, as written
			}
		}
		res, err = s.Exec(ctx, sandbox.Cmd{
			Args: inv.argv, Dir: inv.dir, Env: env,
			Timeout: opts.Timeout, OutputLimit: opts.OutputLimit,
			// Capture everything the limit lets through, so that parsing
			// never sees a stream with its middle cut out.
			Capture: int(opts.OutputLimit) + 1,
		})
		if err != nil {
			return nil, fmt.Errorf("run tests (%s): %w", strings.Join(inv.argv, " "), err)
		}
		// pytest refuses to run anything when one chosen id does not
		// exist; run the others, and the missing ones stay unreported.
		if c.Framework == Pytest && res.ExitCode == 4 && len(opts.IDs) > 0 {
			if kept := withoutNotFound(opts.IDs, res.Stdout, res.Stderr); len(kept) < len(opts.IDs) && len(kept) > 0 {
				opts.IDs = kept
				continue
			}
		}
		break
	}
	rep.Result = res
	switch c.Framework {
	case Unittest:
		tests, finished := ParseUnittest(res.Stderr)
		rep.Tests = tests
		if !finished {
			rep.Note = "unittest did not finish: " + res.Describe()
		}
	default:
		data, err := s.ReadFile(ctx, junit, 0)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// No JUnit report: the session did not end normally. What the
			// stream recorded is what is known.
			ended := res.Describe()
			if data, err := s.ReadFile(ctx, stream, 0); err == nil && len(data) > 0 {
				rep.Tests = parseStream(data, ended)
				rep.Note = "pytest ended without its report (" + ended + LastLine(res.Stderr, res.Stdout) + "); outcomes from cwm's per-test stream"
				break
			}
			if c.Framework == Shell && res.Reason == sandbox.ReasonNone {
				// Nothing reported per test: the command is the test.
				o := Pass
				if !res.Success() {
					o = Fail
				}
				rep.Tests = []Test{{ID: c.Line, Outcome: o, Time: res.Duration}}
				rep.Note = "no JUnit report: the command counts as one test"
			} else {
				rep.Note = "pytest wrote no report: " + res.Describe() + pytestCause(res.Stderr, res.Stdout)
			}
		case err == nil && res.ExitCode == 4 && c.Framework == Pytest:
			rep.Note = "pytest stopped before running tests (usage error)" + pytestCause(res.Stdout, res.Stderr)
		case err != nil:
			return nil, fmt.Errorf("read test report %s: %w", junit, err)
		default:
			// The session ended normally. Ids come from the stream, which
			// has pytest's own node ids; the JUnit report is the fallback
			// for a pytest that did not load the reporter (a command that
			// replaced PYTEST_ADDOPTS), whose ids are rebuilt from class
			// names and files.
			if sdata, err := s.ReadFile(ctx, stream, 0); err == nil && len(sdata) > 0 {
				rep.Tests = parseStream(sdata, "")
				break
			}
			tests, err := ParseJUnit(data)
			if err != nil {
				return nil, fmt.Errorf("parse test report: %w", err)
			}
			rep.Tests = tests
		}
	}
	if c.Framework != Unittest && res.ExitCode == 5 && len(rep.Tests) == 0 && rep.Note == "" {
		rep.Note = "exit status 5: no tests were collected"
	}
	if res.Reason != sandbox.ReasonNone && rep.Note == "" {
		rep.Note = "stopped by the " + string(res.Reason) + " limit"
	}
	return rep, nil
}

// installPlugin writes cwm's pytest reporter and its id-aware unittest
// command line into the sandbox.
func installPlugin(ctx context.Context, s *sandbox.Sandbox) error {
	if _, err := s.Stat(ctx, pluginDir+"/cwmreport.py"); err == nil {
		return nil
	}
	res, err := s.Exec(ctx, sandbox.Cmd{Args: []string{"mkdir", "-p", pluginDir}, Timeout: time.Minute})
	if err == nil && !res.Success() {
		err = errors.New(res.Describe() + LastLine(res.Stderr))
	}
	if err == nil {
		err = s.WriteFile(ctx, pluginDir+"/cwmreport.py", cwmreportPy, 0o644)
	}
	if err == nil {
		err = s.WriteFile(ctx, pluginDir+"/"+PertestModule+".py", PertestPy, 0o644)
	}
	if err != nil {
		return fmt.Errorf("install the test reporter: %w", err)
	}
	return nil
}

// withoutNotFound drops the ids pytest reported as not found ("ERROR: not
// found: /repo/tests/t.py::x", "ERROR: file or directory not found: t.py").
func withoutNotFound(ids []string, outputs ...[]byte) []string {
	var missing []string
	for _, o := range outputs {
		for _, line := range strings.Split(string(o), "\n") {
			if _, what, ok := strings.Cut(line, "not found: "); ok && strings.HasPrefix(line, "ERROR:") {
				missing = append(missing, strings.TrimSpace(what))
			}
		}
	}
	var kept []string
	for _, id := range ids {
		gone := false
		for _, m := range missing {
			if m == id || strings.HasSuffix(m, "/"+id) || strings.HasPrefix(id, m+"::") || strings.HasSuffix(m, "/"+strings.SplitN(id, "::", 2)[0]) && !strings.Contains(m, "::") {
				gone = true
			}
		}
		if !gone {
			kept = append(kept, id)
		}
	}
	return kept
}

// LastLine is ": " and the last non-empty line of the first stream that
// has one (at most 300 bytes), for short notes after a description.
func LastLine(streams ...[]byte) string {
	for _, b := range streams {
		s := strings.TrimSpace(string(b))
		if s == "" {
			continue
		}
		if i := strings.LastIndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
		if len(s) > 300 {
			s = s[:300] + "..."
		}
		return ": " + s
	}
	return ""
}

// pytestStopLine is a line of pytest's that says why it stopped before
// running tests ("pytest: error: unrecognized arguments: --mypy", "python
// -m pytest: error: ...", "ERROR: file or directory not found: t.py");
// its usage line, printed first, says nothing.
var pytestStopLine = lazyre.New(`^(ERROR: |[\w.-]+(?: -m [\w.]+)?: error: )`)

// pytestCause is ": " and the first line of pytest's outputs that states
// why it stopped, which the last line seldom is (rootdir: /repo), or
// LastLine when none does.
func pytestCause(streams ...[]byte) string {
	for _, b := range streams {
		for _, line := range strings.Split(string(b), "\n") {
			t := strings.TrimSpace(line)
			if pytestStopLine().MatchString(t) && !strings.HasPrefix(t, "ERROR: usage:") {
				if len(t) > 300 {
					t = t[:300] + "..."
				}
				return ": " + t
			}
		}
	}
	return LastLine(streams...)
}

// configWarnings is the warning filter cwm adds to pytest: a configuration
// option that the installed pytest or plugin does not know (a Debian
// pytest-asyncio without asyncio_default_fixture_loop_scope) is the
// environment's age, not the suite's failure, yet a suite with
// filterwarnings = error stops on it before running anything.
const configWarnings = "ignore::pytest.PytestConfigWarning"

type invocation struct {
	argv []string
	dir  string
	env  []string
}

// invocation builds the command that runs c with per-test reporting.
func (c Command) invocation(opts Options, junit, workdir string) (invocation, error) {
	dir := path.Join(workdir, c.Dir)
	env := append([]string{}, c.Env...)
	py := opts.Python
	switch c.Framework {
	case Pytest:
		argv := []string{py, "-m", "pytest", "-p", "no:cacheprovider", "-p", "cwmreport", "--junitxml=" + junit,
			"-o", "junit_family=xunit1", "--continue-on-collection-errors", "-W", configWarnings}
		argv = append(argv, opts.PytestArgs...)
		if len(opts.IDs) == 0 {
			argv = append(argv, c.Args...)
		} else {
			argv = append(append(argv, pytestOptions(c.Args)...), opts.IDs...)
		}
		return invocation{argv: argv, dir: dir, env: env}, nil
	case Unittest:
		mod := opts.UnittestModule
		if mod == "" {
			mod = "unittest"
			if len(opts.IDs) > 0 {
				// Chosen tests by id: unittest's command line with a
				// loader that also finds the tests a load_tests hook
				// adds (doctests) by the ids unittest gave them.
				mod = PertestModule
			}
		}
		l := parseUnittestArgs(c.Args)
		argv := []string{py, "-m", mod}
		if l.discover && len(opts.IDs) == 0 {
			// unittest only recognises discover as its first argument.
			argv = append(argv, "discover")
		}
		argv = append(argv, "-v")
		if versionAtLeast(opts.PythonVersion, 3, 12) {
			argv = append(argv, "--durations", "0")
		}
		switch {
		case len(opts.IDs) > 0:
			// Ids are module paths from the top-level directory; run from
			// there with the original directory importable, as discovery
			// would have arranged.
			argv = append(append(argv, l.options...), opts.IDs...)
			env = append(env, "PYTHONPATH="+dir)
			if l.discover {
				// Where the id-aware loader looks for a test no module
				// names (a doctest a load_tests hook added elsewhere).
				pattern := l.pattern
				if pattern == "" {
					pattern = "test*.py"
				}
				env = append(env, "CWM_UNITTEST_DISCOVER="+path.Join(dir, l.start)+"\n"+pattern+"\n"+path.Join(dir, l.top))
			}
			dir = path.Join(dir, l.top)
		case l.discover:
			argv = append(argv, "-s", l.start, "-t", l.top)
			if l.pattern != "" {
				argv = append(argv, "-p", l.pattern)
			}
			argv = append(argv, l.options...)
		default:
			argv = append(append(argv, l.options...), l.names...)
		}
		return invocation{argv: argv, dir: dir, env: env}, nil
	default:
		if len(opts.IDs) > 0 {
			return invocation{}, fmt.Errorf("cannot run chosen tests with %q: cwm does not know its runner", c.Line)
		}
		env = append(env, "PYTEST_ADDOPTS=--junitxml="+junit+" -o junit_family=xunit1 -p no:cacheprovider -p cwmreport --continue-on-collection-errors -W "+configWarnings)
		return invocation{argv: []string{"/bin/bash", "-c", c.Line}, dir: dir, env: env}, nil
	}
}

// versionAtLeast reports whether a "3.12.1"-style version is at least
// major.minor.
func versionAtLeast(v string, major, minor int) bool {
	var a, b int
	if _, err := fmt.Sscanf(v, "%d.%d", &a, &b); err != nil {
		return false
	}
	return a > major || a == major && b >= minor
}
