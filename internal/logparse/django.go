package logparse

import (
	"strings"

	"cwm/internal/lazyre"
)

// pyS is Python's \s in a str pattern: Unicode whitespace (RE2's \s is
// ASCII only).
const pyS = `[\pZ\t\n\v\f\r\x1c-\x1f\x85]`

// djangoInterrupted are the three forms in which django's runner prints a
// long message between a test's " ... " and its "ok" (see swebench).
var djangoInterrupted = lazyre.List(
	`(?m)^(.*?)`+pyS+`\.\.\.`+pyS+`Testing against Django installed in ((?s:.*?)) silenced\)\.\nok$`,
	`(?m)^(.*?)`+pyS+`\.\.\.`+pyS+`Internal Server Error: /(.*)/\nok$`,
	`(?m)^(.*?)`+pyS+`\.\.\.`+pyS+`System check identified no issues \(0 silenced\)\nok$`,
)

// Django is parse_log_django: django's runtests.py --verbosity 2,
// "test (module.Class) ... ok|skipped|FAIL|ERROR", "FAIL: test" headers,
// and an "ok" on a line of its own for the last test announced.
func Django(log string) map[string]string {
	out := map[string]string{}
	prev, havePrev := "", false
	for _, line := range strings.Split(log, "\n") {
		line = strip(line)
		if strings.Contains(line, "--version is equivalent to version") {
			out["--version is equivalent to version"] = Passed
		}
		if strings.Contains(line, " ... ") {
			prev, _, _ = strings.Cut(line, " ... ")
			havePrev = true
		}
		for _, suffix := range []string{" ... ok", " ... OK", " ...  OK"} {
			if strings.HasSuffix(line, suffix) {
				if strings.HasPrefix(strip(line), "Applying sites.0002_alter_domain_unique...test_no_migrations") {
					_, rest, _ := strings.Cut(line, "...")
					line = strip(rest)
				}
				test := line
				if i := strings.LastIndex(line, suffix); i >= 0 {
					test = line[:i]
				}
				out[test] = Passed
				break
			}
		}
		if strings.Contains(line, " ... skipped") {
			test, _, _ := strings.Cut(line, " ... skipped")
			out[test] = Skipped
		}
		if strings.HasSuffix(line, " ... FAIL") {
			test, _, _ := strings.Cut(line, " ... FAIL")
			out[test] = Failed
		}
		if strings.HasPrefix(line, "FAIL:") {
			if f := fields(line); len(f) > 1 {
				out[strip(f[1])] = Failed
			}
		}
		if strings.HasSuffix(line, " ... ERROR") {
			test, _, _ := strings.Cut(line, " ... ERROR")
			out[test] = Error
		}
		if strings.HasPrefix(line, "ERROR:") {
			if f := fields(line); len(f) > 1 {
				out[strip(f[1])] = Error
			}
		}
		if strings.HasPrefix(strings.TrimLeftFunc(line, isSpace), "ok") && havePrev {
			out[prev] = Passed
		}
	}
	for _, re := range djangoInterrupted() {
		for _, m := range re.FindAllStringSubmatch(log, -1) {
			out[m[1]] = Passed
		}
	}
	return out
}
