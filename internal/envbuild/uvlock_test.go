package envbuild

import (
	"os/exec"
	"strings"
	"testing"
)

// TestUVLockPick: the lock of a uv step names the wheel uv installed,
// found on the index by its tags, also where the wheel's WHEEL file
// writes them as one compressed set (maturin's orjson); before, no file
// matched and the lock named the sdist.
func TestUVLockPick(t *testing.T) {
	script := strings.TrimSuffix(strings.TrimSpace(cwmUVLock), "main()") + `
files = [
    ("orjson-3.11.4.tar.gz", "https://files.example/orjson-3.11.4.tar.gz", "s"),
    ("orjson-3.11.4-cp313-cp313-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", "https://files.example/orjson-3.11.4-cp313.whl", "w"),
]
tags = installed_tags("Wheel-Version: 1.0\nTag: cp313-cp313-manylinux_2_17_x86_64.manylinux2014_x86_64\n")
print(pick(files, "orjson", "3.11.4", tags)[1])
`
	out, err := exec.Command("python3", "-I", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "w" {
		t.Errorf("pick = %q, want the wheel (w), not the sdist (s)", got)
	}
}
