package envbuild

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPinnedRustMembers: the uv workspace members a fallback may replace by
// their release: taken from the workspace by [tool.uv.sources], built with
// maturin or setuptools-rust, and pinned with == by the project.
func TestPinnedRustMembers(t *testing.T) {
	root := `[project]
name = "pydantic"
dependencies = ["typing-extensions>=4", "pydantic-core==2.48.0", "helper==1.0", "loose>=1"]

[tool.uv.sources]
pydantic-core = { workspace = true }
helper = { workspace = true }
loose = { workspace = true }
docs = { git = "https://example.org/docs" }
torch = [{ index = "cpu", marker = "sys_platform == 'linux'" }, { index = "mac", marker = "sys_platform == 'darwin'" }]

[tool.uv.workspace]
members = ["pydantic-core", "libs/*"]
`
	repo := writeTree(t, map[string]string{
		"pyproject.toml":               root,
		"pydantic-core/pyproject.toml": "[build-system]\nrequires = ['maturin>=1.13.3,<2']\nbuild-backend = 'maturin'\n[project]\nname = 'pydantic_core'\n",
		"libs/helper/pyproject.toml":   "[build-system]\nrequires = ['setuptools']\n[project]\nname = 'helper'\n",
		"libs/loose/pyproject.toml":    "[build-system]\nrequires = ['setuptools', 'setuptools-rust']\n[project]\nname = 'loose'\n",
	})
	got := pinnedRustMembers(repo)
	want := []pinnedRustMember{{name: "pydantic-core", req: "pydantic-core==2.48.0", dir: "pydantic-core"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(pinnedRustMember{})); diff != "" {
		t.Errorf("pinnedRustMembers mismatch (-want +got):\n%s", diff)
	}
	for line, want := range map[string]bool{
		"Caused by: Cargo metadata failed. Do you have cargo in your PATH?": true,
		"error: can't find Rust compiler":                                   true,
		"Rust not found, installing into a temporary directory":             true,
		"error: command 'gcc' failed":                                       false,
	} {
		if got := rustMissing().MatchString(line); got != want {
			t.Errorf("rustMissing(%q) = %v, want %v", line, got, want)
		}
	}
}
