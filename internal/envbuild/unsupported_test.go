package envbuild

import (
	"strings"
	"testing"

	"cwm/internal/testrun"
)

// TestUnsupportedApt: a CI's apt-get line is skipped with the cwm command
// that builds a base with its packages (sphinx's graphviz, lxml's
// pinned libxml2), sudo and options left out.
func TestUnsupportedApt(t *testing.T) {
	for line, want := range map[string]string{
		"sudo apt-get install graphviz":                             "--packages graphviz,",
		`sudo apt-get install -y -q "libxml2=2.9.14*" libxslt1-dev`: "--packages libxml2,libxslt1-dev,",
		"sudo apt-get update":                                       "system packages cannot be installed in the sandbox",
		"brew install automake":                                     "build on a base that has them (--base)",
	} {
		cmds, _, err := testrun.Words(line)
		if err != nil {
			t.Fatal(err)
		}
		_, _, words, _ := simpleCommand(cmds)
		if got := unsupported(words); !strings.Contains(got, want) {
			t.Errorf("unsupported(%q) = %q, want it to say %q", line, got, want)
		}
	}
}
