package report

import (
	"testing"

	"cwm/internal/sandbox"
	"cwm/internal/sandbox/sandboxtest"
)

var (
	testRT   *sandbox.Runtime
	testHome string // removed with everything in it when the tests end
)

func TestMain(m *testing.M) {
	sandboxtest.Main(m, "report", func(rt *sandbox.Runtime, home string) { testRT, testHome = rt, home })
}
