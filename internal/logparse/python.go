package logparse

import (
	"strings"

	"cwm/internal/lazyre"
)

// Pytest is parse_log_pytest: "STATUS id" lines of pytest -rA, the id cut
// at its first space (a parametrised id with spaces keeps its first
// word, as in SWE-bench).
func Pytest(log string) map[string]string {
	return pytestLines(log, func(line string) string { return line })
}

// Matplotlib is parse_log_matplotlib: Pytest with MouseButton names
// replaced by their numbers.
func Matplotlib(log string) map[string]string {
	return pytestLines(log, func(line string) string {
		line = strings.ReplaceAll(line, "MouseButton.LEFT", "1")
		return strings.ReplaceAll(line, "MouseButton.RIGHT", "3")
	})
}

// PytestKey is the key Pytest files a test's outcome under when pytest's
// -rA summary names the test by id: the id up to its first white space
// (itself for an id without any). A test whose key is not its id, or is
// another test's too, cannot be told apart in SWE-bench's report.
func PytestKey(id string) string {
	f := fields(id)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func pytestLines(log string, prep func(string) string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(log, "\n") {
		line = prep(line)
		if !startsWithStatus(line) {
			continue
		}
		if strings.HasPrefix(line, Failed) {
			line = strings.ReplaceAll(line, " - ", " ")
		}
		f := fields(line)
		if len(f) <= 1 || isSkipSummary(f[0], f[1]) {
			continue
		}
		out[f[1]] = f[0]
	}
	return out
}

var option = lazyre.New(`(.*?)\[(.*)\]`)

// PytestOptions is parse_log_pytest_options: Pytest, with a parameter
// that is an absolute path shortened to its last component.
func PytestOptions(log string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(log, "\n") {
		if !startsWithStatus(line) {
			continue
		}
		if strings.HasPrefix(line, Failed) {
			line = strings.ReplaceAll(line, " - ", " ")
		}
		f := fields(line)
		if len(f) <= 1 || isSkipSummary(f[0], f[1]) {
			continue
		}
		name := f[1]
		if m := option().FindStringSubmatch(name); m != nil {
			main, opt := m[1], m[2]
			if strings.HasPrefix(opt, "/") && !strings.HasPrefix(opt, "//") && !strings.Contains(opt, "*") {
				parts := strings.Split(opt, "/")
				opt = "/" + parts[len(parts)-1]
			}
			name = main + "[" + opt + "]"
		}
		out[name] = f[0]
	}
	return out
}

var (
	colour = lazyre.New(`\[(\p{Nd}+)m`)
	// controls are the characters 1 to 31, which parse_log_pytest_v2 drops.
	controls = strings.NewReplacer(func() []string {
		var r []string
		for c := 1; c < 32; c++ {
			r = append(r, string(rune(c)), "")
		}
		return r
	}()...)
)

// plain is a line with colour codes and control characters dropped, as
// parse_log_pytest_v2 reads it.
func plain(line string) string { return controls.Replace(colour().ReplaceAllString(line, "")) }

// PytestV2 is parse_log_pytest_v2: colour codes and control characters
// dropped, the whole rest of the line the id (spaces kept), and lines
// ending in a status (older pytest's verbose form) read too.
func PytestV2(log string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(log, "\n") {
		line = plain(line)
		switch {
		case startsWithStatus(line):
			if strings.HasPrefix(line, Failed) {
				line, _, _ = strings.Cut(line, " - ")
			}
			f := fields(line)
			if len(f) >= 2 && !isSkipSummary(f[0], f[1]) {
				out[strings.Join(f[1:], " ")] = f[0]
			}
		case endsWithStatus(line):
			f := fields(line)
			if len(f) >= 2 {
				out[strings.Join(f[:len(f)-1], " ")] = f[len(f)-1]
			}
		}
	}
	return out
}

// Seaborn is parse_log_seaborn.
func Seaborn(log string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(log, "\n") {
		f := fields(line)
		if len(f) < 2 {
			continue
		}
		switch {
		case strings.HasPrefix(line, Failed):
			out[f[1]] = Failed
		case strings.Contains(line, " "+Passed+" "):
			if f[1] == Passed {
				out[f[0]] = Passed
			}
		case strings.HasPrefix(line, Passed):
			out[f[1]] = Passed
		}
	}
	return out
}

var sympyFailure = lazyre.New(`(_*) (.*)\.py:(.*) (_*)`)

// Sympy is parse_log_sympy: sympy's own runner (bin/test), "test_x ok",
// " F", " E", and the "____ path.py:test ____" headers of failures.
func Sympy(log string) map[string]string {
	out := map[string]string{}
	for _, m := range sympyFailure().FindAllStringSubmatch(log, -1) {
		out[m[2]+".py:"+m[3]] = Failed
	}
	for _, line := range strings.Split(log, "\n") {
		line = strip(line)
		if !strings.HasPrefix(line, "test_") {
			continue
		}
		if strings.HasSuffix(line, " E") {
			out[fields(line)[0]] = Error
		}
		if strings.HasSuffix(line, " F") {
			out[fields(line)[0]] = Failed
		}
		if strings.HasSuffix(line, " ok") {
			out[fields(line)[0]] = Passed
		}
	}
	return out
}
