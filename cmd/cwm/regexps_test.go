package main

import (
	"testing"

	"cwm/internal/lazyre"
)

// TestRegexpsCompile compiles every regular expression cwm's packages
// compile on first use, so that an invalid one fails here rather than in
// the command that first needs it.
func TestRegexpsCompile(t *testing.T) {
	if n := lazyre.CompileAll(); n < 50 {
		t.Fatalf("%d expressions registered; cwm's packages have more", n)
	}
}
