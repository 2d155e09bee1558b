package basebuild

import (
	"testing"

	"cwm/internal/sandbox"
	"cwm/internal/sandbox/sandboxtest"
)

// rt is the sandbox runtime of the package's tests (the Python of a base
// is found in a sandbox on it).
var rt *sandbox.Runtime

func TestMain(m *testing.M) {
	sandboxtest.Main(m, "base", func(r *sandbox.Runtime, _ string) { rt = r })
}
