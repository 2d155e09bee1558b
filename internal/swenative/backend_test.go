package swenative

import (
	"testing"
)

// TestTranslateOldBackend checks that a project whose build pins a
// setuptools without build_editable (pylint 2.15's) is installed without
// build isolation, as the harness's pip fell back to, and no other.
func TestTranslateOldBackend(t *testing.T) {
	const pylint215 = "[build-system]\nrequires = [\"setuptools~=62.6\", \"wheel~=0.37.1\"]\nbuild-backend = \"setuptools.build_meta\"\n"
	isolated := "python -m pip install -e ."
	for _, tc := range []struct {
		name, pyproject, want string
	}{
		{"pylint 2.15", pylint215, "python -m pip install --no-build-isolation -e . </dev/null"},
		{"below 64", "[build-system]\nrequires = [\"setuptools<64\"]\n", "python -m pip install --no-build-isolation -e . </dev/null"},
		{"pinned", "[build-system]\nrequires = [\"setuptools==58.0.4\"]\n", "python -m pip install --no-build-isolation -e . </dev/null"},
		{"a lower bound", "[build-system]\nrequires = [\"setuptools>=45\", \"setuptools_scm[toml]>=6.2.3\"]\nbuild-backend = \"setuptools.build_meta\"\n", isolated},
		{"below 65", "[build-system]\nrequires = [\"setuptools<65\"]\n", isolated},
		{"another backend", "[build-system]\nrequires = [\"flit_core<4\", \"setuptools<60\"]\nbuild-backend = \"flit_core.buildapi\"\n", isolated},
		{"no pyproject", "", isolated},
		{"not TOML", "[build-system\n", isolated},
	} {
		s := &Spec{Pyproject: tc.pyproject}
		s.Fields.Install = "python -m pip install -e ."
		r := translate(s, []string{"3.9"}, func(string) string { return "" }, nil)
		if got := r.Install[len(r.Install)-1]; got != tc.want {
			t.Errorf("%s: the project's install is %q, want %q", tc.name, got, tc.want)
		}
		if got := r.Instance[len(r.Instance)-1]; got != tc.want {
			t.Errorf("%s: the instance's install is %q, want %q", tc.name, got, tc.want)
		}
	}
}
