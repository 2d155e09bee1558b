package narrate

import (
	"testing"

	"cwm/internal/sandbox"
	"cwm/internal/sandbox/sandboxtest"
)

var testRT *sandbox.Runtime

func TestMain(m *testing.M) {
	sandboxtest.Main(m, "narrate", func(rt *sandbox.Runtime, _ string) { testRT = rt })
}
