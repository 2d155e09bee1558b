package swenative

import (
	"context"
	"testing"
)

// TestScmVersion checks the version an instance's install pretends
// setuptools_scm found, against git describe in a real clone with tags.
func TestScmVersion(t *testing.T) {
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	commit := func() string {
		git(t, dir, "commit", "-q", "--allow-empty", "-m", "c")
		return git(t, dir, "rev-parse", "HEAD")
	}
	untagged := commit()
	tagged := commit()
	git(t, dir, "tag", "v4.6.0")
	commit()
	after := commit()
	named := commit()
	git(t, dir, "tag", "sympy-1.1")
	for _, tc := range []struct{ rev, want string }{
		{tagged, "4.6.0"},
		{after, "4.6.1.dev2"},
		{named, ""},    // the nearest tag is not a version
		{untagged, ""}, // no tag before it
	} {
		if got := scmVersion(context.Background(), dir, tc.rev); got != tc.want {
			t.Errorf("scmVersion(%s) = %q, want %q", tc.rev[:7], got, tc.want)
		}
	}
}

// TestEditable checks that the project's install is made editable, as
// the build makes it.
func TestEditable(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"python -m pip install .", "python -m pip install -e ."},
		{"python -m pip install -v .[test]", "python -m pip install -v -e .[test]"},
		{"python -m pip install -e .", "python -m pip install -e ."},
		{"pip install -r requirements.txt", "pip install -r requirements.txt"},
		{"python setup.py develop", "python setup.py develop"},
	} {
		if got := editable(tc.line); got != tc.want {
			t.Errorf("editable(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}
