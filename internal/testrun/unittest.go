package testrun

import (
	"cwm/internal/lazyre"
	"strconv"
	"strings"
	"time"
)

var (
	// "test_x (mod.Class.test_x)" on 3.11+, "test_x (mod.Class)" before;
	// a subtest adds " (i=2)" and a verbose status follows " ... ".
	unittestStart = lazyre.New(`^(\s*)(\w+) \(([\w.]+)\)(?: \((.*?)\))?(?: \.\.\. (.*))?$`)
	// "FAIL: test_x (mod.Class.test_x)" in the summary sections.
	unittestHeader = lazyre.New(`^(FAIL|ERROR|UNEXPECTED SUCCESS): (\w+) \(([\w.]+)\)`)
	unittestRan    = lazyre.New(`^Ran (\d+) tests? in `)
	// "0.012s     test_x (mod.Class.test_x)" under "Slowest test durations" (3.12+).
	unittestDuration = lazyre.New(`^(\d+\.\d+)s\s+(\w+) \(([\w.]+)\)`)
)

// unittestID turns the name and the parenthesised part of a verbose line
// into a test id. Import failures of a module ("unittest.loader._FailedTest")
// are reported under the module's name; class and module fixtures
// ("setUpClass (mod.Class)") under the class or module.
func unittestID(name, where string) string {
	switch {
	case strings.HasPrefix(where, "unittest.loader._FailedTest"):
		return name
	case name == "setUpClass" || name == "tearDownClass" || name == "setUpModule" || name == "tearDownModule":
		return where
	case strings.HasSuffix(where, "."+name):
		return where
	}
	return where + "." + name
}

func unittestStatus(s string) (Outcome, string, bool) {
	s = strings.TrimSpace(s)
	switch {
	case s == "ok":
		return Pass, "", true
	case s == "FAIL":
		return Fail, "", true
	case s == "ERROR":
		return Error, "", true
	case s == "expected failure":
		return Skip, "expected failure", true
	case s == "unexpected success":
		return Fail, "unexpected success", true
	case strings.HasPrefix(s, "skipped"):
		msg := strings.TrimSpace(strings.TrimPrefix(s, "skipped"))
		return Skip, strings.Trim(msg, `'"`), true
	}
	return "", "", false
}

// ParseUnittest reads the stderr of a verbose unittest run (-v) into
// per-test outcomes, in the order the tests ran. finished reports whether
// the run got as far as its "Ran N tests" line; when it did, a test that
// started but whose status line was garbled by the test's own output
// passed (failures and errors have their own summary sections, skips say
// so). When it did not, such a test is an error.
func ParseUnittest(stderr []byte) (tests []Test, finished bool) {
	index := map[string]int{}
	pending := "" // started, no status seen yet
	set := func(id string, o Outcome, msg string) {
		if i, ok := index[id]; ok {
			if o.rank() > tests[i].Outcome.rank() || tests[i].Outcome == "" {
				tests[i].Outcome, tests[i].Message = o, msg
			}
			return
		}
		index[id] = len(tests)
		tests = append(tests, Test{ID: id, Outcome: o, Message: msg})
	}
	lines := strings.Split(string(stderr), "\n")
	inSummary := false
	for _, line := range lines {
		line = strings.TrimRight(line, "\r")
		if unittestRan().MatchString(line) {
			finished = true
			continue
		}
		if strings.HasPrefix(line, "======") {
			inSummary = true
			pending = ""
			continue
		}
		if m := unittestHeader().FindStringSubmatch(line); m != nil {
			id := unittestID(m[2], m[3])
			switch m[1] {
			case "FAIL", "UNEXPECTED SUCCESS":
				set(id, Fail, "")
			case "ERROR":
				set(id, Error, "")
			}
			continue
		}
		if m := unittestDuration().FindStringSubmatch(line); m != nil {
			if i, ok := index[unittestID(m[2], m[3])]; ok {
				if f, err := strconv.ParseFloat(m[1], 64); err == nil {
					tests[i].Time = time.Duration(f * float64(time.Second))
				}
			}
			continue
		}
		if inSummary {
			continue
		}
		if m := unittestStart().FindStringSubmatch(line); m != nil {
			id := unittestID(m[2], m[3])
			subtest := m[1] != "" || m[4] != ""
			if _, ok := index[id]; !ok {
				set(id, "", "")
			}
			if o, msg, ok := unittestStatus(m[5]); ok {
				set(id, o, msg)
				if !subtest {
					pending = ""
				}
			} else if !subtest {
				pending = id
			}
			continue
		}
		if pending == "" {
			continue
		}
		// The status of a test whose docstring or own output came first.
		status := line
		if i := strings.LastIndex(line, " ... "); i >= 0 {
			status = line[i+5:]
		}
		if o, msg, ok := unittestStatus(status); ok {
			set(pending, o, msg)
			pending = ""
		}
	}
	for i := range tests {
		if tests[i].Outcome == "" {
			if finished {
				tests[i].Outcome = Pass
			} else {
				tests[i].Outcome, tests[i].Message = Error, "the run ended before this test finished"
			}
		}
	}
	return tests, finished
}
