package tasks

import (
	"fmt"
	"strings"

	"cwm/internal/lazyre"
	"cwm/internal/testrun"
)

// maxListed caps the failing tests a problem statement lists.
const maxListed = 10

// problemStatement describes a mutate-fix task the way a bug report would:
// which tests fail and how. It never says where the fix is: no mutation,
// no source file, no line number (scrub takes them out of messages).
func problemStatement(f2p []string, got map[string]testrun.Test) string {
	var b strings.Builder
	if len(f2p) == 1 {
		b.WriteString("After a recent change, one of the repository's tests fails:\n\n")
	} else {
		fmt.Fprintf(&b, "After a recent change, %d of the repository's tests fail:\n\n", len(f2p))
	}
	for i, id := range f2p {
		if i == maxListed {
			fmt.Fprintf(&b, "- ... and %d more\n", len(f2p)-maxListed)
			break
		}
		t := got[id]
		fmt.Fprintf(&b, "- %s\n", id)
		msg := scrub(t.Message)
		if msg == "" {
			msg = string(t.Outcome)
		}
		fmt.Fprintf(&b, "  %s\n", clip(msg, 400))
	}
	b.WriteString("\nThe other tests still pass. Fix the code so that these tests pass again without breaking the others; the tests themselves are correct.\n")
	return b.String()
}

var (
	// A path to a Python file, absolute or relative, maybe with :LINE.
	pyPathRE = lazyre.New(`(?:/[^\s:'"()]+|[\w.\-]+(?:/[\w.\-]+)*)\.py(?::\d+)*`)
	// ", line 12" from a traceback's File "...", line 12, in f.
	lineRE = lazyre.New(`,? line \d+`)
)

// scrub removes where the code under test lives from an error message:
// paths of non-test Python files and line numbers. Test files stay, since
// the test ids name them anyway.
func scrub(msg string) string {
	msg = pyPathRE().ReplaceAllStringFunc(msg, func(p string) string {
		file := p
		if i := strings.Index(file, ".py"); i >= 0 {
			file = file[:i+3]
		}
		file = strings.TrimPrefix(file, "/repo/")
		if isTestFile(file) {
			return file
		}
		return "<source>"
	})
	return strings.TrimSpace(lineRE().ReplaceAllString(msg, ""))
}
