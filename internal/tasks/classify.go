package tasks

import (
	"fmt"
	"path"
	"strings"

	"cwm/internal/lazyre"
	"cwm/internal/task"
	"cwm/internal/testrun"
)

// The fix classifier's rules (docs/tasks.md, "The fix classifier"). Each
// rule adds to a score; a commit is a fix when the score is positive.
const (
	scoreFixSubject     = 2  // a fix word in the subject line
	scoreFixBody        = 1  // a fix word only in the body
	scoreClosesIssue    = 2  // "fixes #N", "closes #N", "resolves #N"
	scoreFeatureSubject = -2 // a feature, refactor, docs or release word in the subject
	scoreFailsInCode    = 2  // most FAIL_TO_PASS tests fail by assertion or exception
	scoreMissingName    = -3 // most fail because a name the commit adds is missing
)

var (
	fixWords = words("fix", "fixes", "fixed", "fixing", "bug", "bugs", "bugfix", "hotfix", "regression",
		"crash", "crashes", "crashed", "error", "errors", "incorrect", "wrong", "broken", "exception",
		"mistake", "typo", "repair", "prevent", "avoid")
	featureWords = words("add", "adds", "added", "adding", "feature", "features", "implement", "implements",
		"implemented", "support", "supports", "new", "introduce", "introduces", "refactor", "refactoring",
		"cleanup", "docs", "doc", "documentation", "document", "release", "bump", "version", "deprecate", "rename")
	wordRE = lazyre.New(`[a-z]+`)
	// "fixes #12", "closes: gh-12", "resolved #12".
	closesRE = lazyre.New(`(?i)\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?)\b:?\s+(?:[\w.-]+/[\w.-]+)?(?:#|gh-)(\d+)`)
	// Any other reference: "#12", "gh-12", "(issue 12)".
	issueRE = lazyre.New(`(?i)(?:^|[\s(\[,])(?:#|gh-|issue\s+)(\d+)\b`)
	// Failures that say a name is missing, with the name.
	missingNameREs = lazyre.List(
		`cannot import name '(\w+)'`,
		`has no attribute '(\w+)'`,
		`name '(\w+)' is not defined`,
		`unexpected keyword argument '(\w+)'`,
		`No module named '([\w.]+)'`,
	)
	// Definitions in a diff line: def and class names, parameters,
	// module-level assignments.
	defRE    = lazyre.New(`^\s*(?:async\s+)?def\s+(\w+)\s*\(([^)]*)`)
	classRE  = lazyre.New(`^\s*class\s+(\w+)`)
	assignRE = lazyre.New(`^(\w+)\s*(?::[^=]*)?=[^=]`)
	paramRE  = lazyre.New(`(?:^|,)\s*\**(\w+)`)
)

func words(ws ...string) map[string]bool {
	m := map[string]bool{}
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// classifyFix decides whether a commit fixes a bug, from its message, the
// names its source patch adds, and how the FAIL_TO_PASS tests failed on
// the buggy tree (failures: their results with the test changes alone).
func classifyFix(message, patch string, f2p []string, failures map[string]testrun.Test) *task.FixClass {
	c := &task.FixClass{}
	add := func(score int, reason string, args ...any) {
		c.Score += score
		c.Reasons = append(c.Reasons, fmt.Sprintf("%+d ", score)+fmt.Sprintf(reason, args...))
	}
	subject, body, _ := strings.Cut(strings.TrimSpace(message), "\n")
	inSubject, inBody := matching(subject, fixWords), matching(body, fixWords)
	switch {
	case len(inSubject) > 0:
		add(scoreFixSubject, "the subject says %s", quoteAll(inSubject))
	case len(inBody) > 0:
		add(scoreFixBody, "the message body says %s", quoteAll(inBody))
	}
	if feat := matching(subject, featureWords); len(feat) > 0 {
		add(scoreFeatureSubject, "the subject says %s", quoteAll(feat))
	}
	closes := map[string]bool{}
	for _, m := range closesRE().FindAllStringSubmatch(message, -1) {
		closes["#"+m[1]] = true
	}
	seen := map[string]bool{}
	for _, m := range append(closesRE().FindAllStringSubmatch(message, -1), issueRE().FindAllStringSubmatch(message, -1)...) {
		if n := "#" + m[1]; !seen[n] {
			seen[n] = true
			c.Issues = append(c.Issues, n)
		}
	}
	if len(closes) > 0 {
		add(scoreClosesIssue, "the message closes issue %s", strings.Join(sortedKeys(closes), ", "))
	}

	added := addedNames(patch)
	var missing, inCode []string
	names := map[string]bool{}
	for _, id := range f2p {
		msg := failures[id].Message
		if name := missingName(msg, added); name != "" {
			missing = append(missing, id)
			names[name] = true
		} else {
			inCode = append(inCode, id)
		}
	}
	switch {
	case len(f2p) == 0:
	case 2*len(missing) > len(f2p):
		add(scoreMissingName, "%d of %d FAIL_TO_PASS tests fail because a name the commit adds is missing (%s): new behaviour, not a bug",
			len(missing), len(f2p), strings.Join(sortedKeys(names), ", "))
	default:
		first := failures[inCode[0]].Message
		if first == "" {
			first = string(failures[inCode[0]].Outcome)
		}
		add(scoreFailsInCode, "%d of %d FAIL_TO_PASS tests fail in the code under test (%s: %s)",
			len(inCode), len(f2p), inCode[0], clip(scrub(first), 120))
	}
	c.Fix = c.Score > 0
	if len(c.Reasons) == 0 {
		c.Reasons = []string{"no evidence either way"}
	}
	return c
}

// missingName is the name a failure message says is missing, when the
// patch adds it ("" otherwise).
func missingName(msg string, added map[string]bool) string {
	for _, re := range missingNameREs() {
		for _, m := range re.FindAllStringSubmatch(msg, -1) {
			name := m[1]
			if i := strings.LastIndexByte(name, '.'); i >= 0 {
				name = name[i+1:] // a module: its last component
			}
			if added[name] {
				return name
			}
		}
	}
	return ""
}

// addedNames are the names a patch defines that it did not define before:
// functions, classes, parameters, module-level assignments and new modules.
func addedNames(patch string) map[string]bool {
	plus, minus := map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(patch, "\n") {
		var into map[string]bool
		switch {
		case strings.HasPrefix(line, "+++ b/"):
			if mod := fileModule(strings.TrimPrefix(line, "+++ b/")); mod != "" {
				plus[mod] = true
			}
			continue
		case strings.HasPrefix(line, "--- a/"):
			if mod := fileModule(strings.TrimPrefix(line, "--- a/")); mod != "" {
				minus[mod] = true
			}
			continue
		case strings.HasPrefix(line, "+"):
			into = plus
		case strings.HasPrefix(line, "-"), strings.HasPrefix(line, " "):
			into = minus // context lines were there before too
		default:
			continue
		}
		src := line[1:]
		if m := defRE().FindStringSubmatch(src); m != nil {
			into[m[1]] = true
			for _, p := range paramRE().FindAllStringSubmatch(m[2], -1) {
				into[p[1]] = true
			}
		} else if m := classRE().FindStringSubmatch(src); m != nil {
			into[m[1]] = true
		} else if m := assignRE().FindStringSubmatch(src); m != nil {
			into[m[1]] = true
		}
	}
	for n := range minus {
		delete(plus, n)
	}
	delete(plus, "self")
	delete(plus, "cls")
	return plus
}

// fileModule is the module a Python file defines ("" for other files):
// its base name, or its package's for an __init__.py.
func fileModule(file string) string {
	if !strings.HasSuffix(file, ".py") {
		return ""
	}
	file = strings.TrimSuffix(file, ".py")
	if dir, base := path.Split(file); base == "__init__" {
		return path.Base(dir)
	}
	return path.Base(file)
}

// matching lists the words of s (lower-cased) that are in set, once each.
func matching(s string, set map[string]bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range wordRE().FindAllString(strings.ToLower(s), -1) {
		if set[w] && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

func quoteAll(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = fmt.Sprintf("%q", w)
	}
	return strings.Join(q, ", ")
}
