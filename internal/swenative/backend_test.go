package swenative

import (
	"testing"
)

// TestTranslateOldBackend checks that a project the harness's pip
// installed with setup.py develop is installed in setuptools' compat
// mode: one without a pyproject.toml (pylint 2.14), and, without build
// isolation, one whose build pins a setuptools without build_editable
// (pylint 2.15); no other.
func TestTranslateOldBackend(t *testing.T) {
	const pylint215 = "[build-system]\nrequires = [\"setuptools~=62.6\", \"wheel~=0.37.1\"]\nbuild-backend = \"setuptools.build_meta\"\n"
	isolated := "python -m pip install -e ."
	noHook := "python -m pip install --no-build-isolation --config-settings editable_mode=compat -e . </dev/null"
	for _, tc := range []struct {
		name, pyproject, want string
	}{
		{"pylint 2.15", pylint215, noHook},
		{"below 64", "[build-system]\nrequires = [\"setuptools<64\"]\n", noHook},
		{"pinned", "[build-system]\nrequires = [\"setuptools==58.0.4\"]\n", noHook},
		{"no pyproject (pylint 2.14)", "", "python -m pip install --config-settings editable_mode=compat -e . </dev/null"},
		{"no build system", "[tool.black]\nline-length = 88\n", isolated},
		{"a lower bound", "[build-system]\nrequires = [\"setuptools>=45\", \"setuptools_scm[toml]>=6.2.3\"]\nbuild-backend = \"setuptools.build_meta\"\n", isolated},
		{"below 65", "[build-system]\nrequires = [\"setuptools<65\"]\n", isolated},
		{"another backend", "[build-system]\nrequires = [\"flit_core<4\", \"setuptools<60\"]\nbuild-backend = \"flit_core.buildapi\"\n", isolated},
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
