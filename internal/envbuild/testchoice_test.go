package envbuild

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCollectsNoTest: a command that collects no test is not the test
// command. nocollect's tox environment runs unittest discovery on a
// directory without tests ("Ran 0 tests") and its Makefile pytest on the
// same directory (exit 5, "no tests ran"): both are passed over for
// pytest's own discovery, which finds the tests. In nocollectall nothing
// collects a test, and the build fails naming every command tried.
func TestCollectsNoTest(t *testing.T) {
	e := mustBuild(t, buildOpts(copyRepo(t, filepath.Join("testdata", "nocollect"))))
	if !e.Usable || e.Counts.Pass != 3 {
		t.Fatalf("Build(nocollect) = usable %v, %v; want usable with 3 passing (reason %q)", e.Usable, e.Counts, e.Reason)
	}
	wantProv := "default (pytest) (collected no test: python -m unittest discover -s typing_checks [tox.ini [testenv] commands]; " +
		"python -m pytest -q typing_checks [Makefile target test])"
	if diff := cmp.Diff(wantProv, e.Test.Provenance); diff != "" || e.Test.Command != "python -m pytest" {
		t.Errorf("Build(nocollect) test = %q from %q; want python -m pytest, provenance diff (-want +got):\n%s", e.Test.Command, e.Test.Provenance, diff)
	}
	if e.TestCommand.String() != "python -m pytest" {
		t.Errorf("Build(nocollect) runs %q, want python -m pytest", e.TestCommand.String())
	}

	// Nothing collects: the build fails with the sentence, kept as an
	// unusable environment (the setup agent starts from it) whose test
	// command is the first candidate's.
	bad := mustBuild(t, buildOpts(copyRepo(t, filepath.Join("testdata", "nocollectall"))))
	want := "a command that collects no test is not the test command: tried python -m pytest -q typing_checks [tox.ini [testenv] commands], python -m pytest [default (pytest)]; no test ran"
	if bad.Usable || !strings.HasPrefix(bad.Reason, want) {
		t.Errorf("Build(nocollectall) = usable %v, reason %q; want unusable, the reason starting %q", bad.Usable, bad.Reason, want)
	}
	if bad.Test.Command != "python -m pytest -q typing_checks" || len(bad.Runs) != 1 {
		t.Errorf("Build(nocollectall) test = %q, %d runs; want the tox command, 1 run", bad.Test.Command, len(bad.Runs))
	}
}
