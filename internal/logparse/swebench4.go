package logparse

import "strings"

// Swebench4 is the suffix of the names of the parsers as swebench 4.x had
// them, where they differ from 5.0.2's: the labels of the datasets made
// in its time (SWE-bench Lite's FAIL_TO_PASS and PASS_TO_PASS among them)
// are its parsers' ids, and cwm tasks import --native, which reads its
// specifications from swebench 4.1.0, grades with them.
const Swebench4 = "@swebench4"

func init() {
	for _, name := range []string{"parse_log_pytest_v2", "parse_log_astropy", "parse_log_scikit", "parse_log_sphinx"} {
		parsers[name+Swebench4] = PytestV2Fields
	}
}

// PytestV2Fields is parse_log_pytest_v2 as swebench 4.1.0 has it: colour
// codes and control characters dropped; a line that starts with a status
// gives the word after it as the id (" - " of a FAILED line made a space
// first), so a parametrised id holding a space is cut there
// ("test_escape_args_and_kwargs[x," where 5.0.2 keeps
// "test_escape_args_and_kwargs[x, y, z-x, y, z]"); a line that ends with a
// status (older pytest's verbose form) gives its first word as the id and
// its second as the status.
func PytestV2Fields(log string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(log, "\n") {
		line = plain(line)
		switch {
		case startsWithStatus(line):
			if strings.HasPrefix(line, Failed) {
				line = strings.ReplaceAll(line, " - ", " ")
			}
			if f := fields(line); len(f) >= 2 {
				out[f[1]] = f[0]
			}
		case endsWithStatus(line):
			if f := fields(line); len(f) >= 2 {
				out[f[0]] = f[1]
			}
		}
	}
	return out
}
