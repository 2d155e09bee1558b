package swenative

import (
	"testing"

	"cwm/internal/sandbox"
	"cwm/internal/sandbox/sandboxtest"
)

// rt is the sandbox runtime of the package's tests.
var rt *sandbox.Runtime

func TestMain(m *testing.M) {
	sandboxtest.Main(m, "swenative", func(r *sandbox.Runtime, _ string) { rt = r })
}
