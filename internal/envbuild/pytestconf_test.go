package envbuild

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPytestImports: the modules pytest's configuration imports as it
// starts, from each file pytest reads it from: filterwarnings categories
// outside the builtins and addopts' -p plugins (not -p no:NAME).
func TestPytestImports(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  map[string]bool
	}{
		{"setup.cfg", map[string]string{"setup.cfg": "[tool:pytest]\naddopts = -p no:aiohttp -v\nfilterwarnings =\n    error\n    ignore:Couldn't import C tracer:coverage.exceptions.CoverageWarning\n    ignore:x:DeprecationWarning:dateutil.tz.tz\n"},
			map[string]bool{"coverage": true}},
		{"pytest.ini", map[string]string{"pytest.ini": "[pytest]\naddopts = -p pytest_cov -pxdist.plugin\nfilterwarnings = ignore::builtins.UserWarning\n"},
			map[string]bool{"pytest_cov": true, "xdist": true}},
		{"tox.ini", map[string]string{"tox.ini": "[tox]\nenvlist = py\n[pytest]\nfilterwarnings = ignore:a:b:c:urllib3.exceptions.InsecureRequestWarning\n"},
			map[string]bool{}},
		{"pyproject ini_options", map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\naddopts = \"-p pytest_mock\"\nfilterwarnings = [\"error\", \"ignore::sqlalchemy.exc.SAWarning\"]\n"},
			map[string]bool{"pytest_mock": true, "sqlalchemy": true}},
		{"pyproject native", map[string]string{"pyproject.toml": "[tool.pytest]\naddopts = [\"-p\", \"anyio\"]\nfilterwarnings = [\"ignore::hypothesis.errors.NonInteractiveExampleWarning\"]\n"},
			map[string]bool{"anyio": true, "hypothesis": true}},
		{"none", map[string]string{"setup.cfg": "[flake8]\nmax-line-length = 99\n"}, map[string]bool{}},
	} {
		got := pytestImports(writeTree(t, tt.files))
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("pytestImports(%s) mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
	mods := map[string]bool{"coverage": true, "xdist": true}
	for name, want := range map[string]bool{"coverage": true, "pytest-xdist": true, "pytest-cov": false, "mypy": false} {
		if got := importedTooling(name, mods); got != want {
			t.Errorf("importedTooling(%q, %v) = %v, want %v", name, mods, got, want)
		}
	}
}
