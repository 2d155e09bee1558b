package taskexport

import (
	"sort"
	"strings"
)

// The test statuses SWE-bench's pytest log parser (parse_log_pytest of
// swebench 5.0.2's harness/log_parsers/python.py) reads: a log line that
// starts with one of them is a test's outcome.
var statuses = []string{"FAILED", "PASSED", "SKIPPED", "ERROR", "XFAIL"}

// ParserKey is the key parse_log_pytest files a test's outcome under when
// pytest's -rA summary prints it: the line split on whitespace, second
// word. For an id without whitespace that is the id itself.
func ParserKey(id string) string {
	f := strings.Fields(id)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// keepable splits ids into those SWE-bench's parser reports under their
// own name and those it cannot: an id with whitespace (cut at the first
// space), or one whose key another test of the suite (all) also has.
func keepable(ids, all []string) (kept, left []string) {
	owners := map[string]int{}
	for _, id := range all {
		owners[ParserKey(id)]++
	}
	for _, id := range ids {
		if ParserKey(id) != id || owners[id] > 1 {
			left = append(left, id)
			continue
		}
		kept = append(kept, id)
	}
	return kept, left
}

// ParsePytestLog is parse_log_pytest of swebench 5.0.2: the status of
// every test a pytest -rA summary names, the last line about a test
// standing. A SKIPPED line whose second word is "[N]" is pytest's skip
// count, not a test.
func ParsePytestLog(log string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(log, "\n") {
		status := ""
		for _, s := range statuses {
			if strings.HasPrefix(line, s) {
				status = s
				break
			}
		}
		if status == "" {
			continue
		}
		if status == "FAILED" {
			line = strings.ReplaceAll(line, " - ", " ")
		}
		f := strings.Fields(line)
		if len(f) <= 1 {
			continue
		}
		if f[0] == "SKIPPED" && isCount(f[1]) {
			continue
		}
		out[f[1]] = f[0]
	}
	return out
}

// isCount matches "[N]".
func isCount(s string) bool {
	if len(s) < 3 || s[0] != '[' || s[len(s)-1] != ']' {
		return false
	}
	for _, c := range s[1 : len(s)-1] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func sorted(ids []string) []string {
	out := append([]string{}, ids...)
	sort.Strings(out)
	return out
}
