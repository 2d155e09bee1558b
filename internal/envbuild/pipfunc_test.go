package envbuild

import (
	"os/exec"
	"strings"
	"testing"

	"cwm/internal/env"
)

// TestPipFunc: in a line bash runs as written, python's -m pip, with
// flags before it or joined to it (aiohttp's python -Im pip), is the
// build's pip; other python commands are python's.
func TestPipFunc(t *testing.T) {
	in := &installer{mode: env.ModeOnline}
	for line, want := range map[string]string{
		"python -m pip install a":     "PIP install a",
		"python -Im pip install -U b": "PIP install -U b",
		"python3 -I -m pip3 list":     "PIP list",
		"python -c 'print(1)'":        "1",
		"python -Im this_is_not_pip":  "No module named this_is_not_pip",
	} {
		script := in.pipFunc() + `pip() { echo PIP "$@"; }; ` + line
		out, _ := exec.Command("bash", "-c", script).CombinedOutput()
		if !strings.Contains(string(out), want) {
			t.Errorf("%s: %q, want %q", line, out, want)
		}
	}
}
