package golden

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "x.golden")
	*update = true
	Check(t, path, "one\ntwo\n")
	*update = false
	if b, err := os.ReadFile(path); err != nil || string(b) != "one\ntwo\n" {
		t.Fatalf("-update wrote %q, %v; want the text", b, err)
	}
	Check(t, path, "one\ntwo\n") // the same: passes

	var ft fakeT
	Check(&ft, path, "one\nthree\n")
	if !ft.failed {
		t.Error("Check of different text did not fail")
	}
}

// fakeT records failures instead of failing the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Fatalf(string, ...any) { f.failed = true }
func (f *fakeT) Fatal(...any)          { f.failed = true }

// Filled sets every exported field, through pointers, slices and maps.
func TestFilled(t *testing.T) {
	type inner struct{ S string }
	type outer struct {
		S   string
		I   int64
		F   float64
		B   bool
		P   *inner
		L   []inner
		M   map[string]int
		low string
	}
	got := Filled[outer]()
	if got.S != "S" || got.I == 0 || got.F == 0 || !got.B || got.P == nil || got.P.S != "S" ||
		len(got.L) != 1 || got.L[0].S != "S" || len(got.M) != 1 || got.low != "" {
		t.Errorf("Filled() = %+v, want every exported field set", got)
	}
}
