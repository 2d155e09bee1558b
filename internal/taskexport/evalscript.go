package taskexport

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"cwm/internal/env"
	"cwm/internal/testrun"
)

// The markers SWE-bench's harness looks for in an eval script's log
// (swebench 5.0.2, harness/constants): get_logs_eval parses what lies
// between them, and record_test_exit_code inserts the test command's
// exit status before the end marker's line.
const (
	startMarker = ">>>>> Start Test Output"
	endMarker   = ">>>>> End Test Output"
)

// LogParser is the SWE-bench log parser (a key of swebench's
// PARSER_REGISTRY) that reads the eval scripts' output.
const LogParser = "parse_log_pytest"

// EvalScript is the bash script SWE-bench's harness runs in the task's
// image after applying a candidate patch, in the form of SWE-bench's own
// (harness/test_spec): restore the test files test_patch touches at
// base_commit, apply test_patch, run the environment's test command
// between the output markers with pytest's -rA summary (the lines
// parse_log_pytest reads), and restore the test files again. It runs in
// /repo, the environment's working tree (the image's /testbed is a link
// to it). The environment's test command must be pytest's.
func EvalScript(e *env.Env, baseCommit, testPatch string) (string, error) {
	c := e.TestCommand
	if c.Framework != testrun.Pytest {
		return "", fmt.Errorf("the test command %q is not pytest's: SWE-bench's pytest log parser cannot read it", c.Line)
	}
	run := testCommand(c)
	files := PatchedFiles(testPatch)
	var b strings.Builder
	b.WriteString("#!/bin/bash\nset -uxo pipefail\n")
	fmt.Fprintf(&b, "cd %s\n", env.RepoRoot)
	fmt.Fprintf(&b, "export PATH=%s/bin:$PATH VIRTUAL_ENV=%s PYTHONDONTWRITEBYTECODE=1\n", env.VenvRoot, env.VenvRoot)
	checkout := ""
	if len(files) > 0 {
		checkout = "git checkout " + baseCommit + " -- " + strings.Join(quoteAll(files), " ") + "\n"
	}
	b.WriteString(checkout)
	if testPatch != "" {
		d := delimiter(testPatch)
		fmt.Fprintf(&b, "git apply -v - <<'%s'\n%s", d, testPatch)
		if !strings.HasSuffix(testPatch, "\n") {
			b.WriteString("\n")
		}
		b.WriteString(d + "\n")
	}
	fmt.Fprintf(&b, ": '%s'\n%s\n: '%s'\n", startMarker, run, endMarker)
	b.WriteString(checkout)
	return b.String(), nil
}

// testCommand is the environment's pytest command asking for the -rA
// summary without colour, in a subshell when it changes directory (so
// the script's later git commands still run in the repository).
func testCommand(c testrun.Command) string {
	line := c.String() + " -rA --color=no -p no:cacheprovider"
	if c.Dir != "" {
		return "(" + line + ")"
	}
	return line
}

// delimiter is a heredoc delimiter text does not contain on a line of its
// own, as swebench's generate_heredoc_delimiter makes one.
func delimiter(text string) string {
	h := sha256.Sum256([]byte(text))
	for i := 0; ; i++ {
		d := fmt.Sprintf("EOF_%x", h[:6])
		if i > 0 {
			d = fmt.Sprintf("%s_%d", d, i)
		}
		if !strings.Contains("\n"+text+"\n", "\n"+d+"\n") {
			return d
		}
	}
}

// PatchedFiles lists the files a git patch changes that exist before it
// (not those it creates), in order: those an eval script restores.
func PatchedFiles(patch string) []string {
	var out []string
	var cur string
	flush := func(isNew bool) {
		if cur != "" && !isNew {
			out = append(out, cur)
		}
		cur = ""
	}
	isNew := false
	for _, line := range strings.Split(patch, "\n") {
		if rest, ok := strings.CutPrefix(line, "diff --git a/"); ok {
			flush(isNew)
			isNew = false
			if i := strings.Index(rest, " b/"); i >= 0 {
				cur = rest[:i]
			}
			continue
		}
		if strings.HasPrefix(line, "new file mode") {
			isNew = true
		}
	}
	flush(isNew)
	return out
}

// quoteAll quotes words for bash.
func quoteAll(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return out
}
