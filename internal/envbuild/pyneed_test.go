package envbuild

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/env"
)

// The snippets are as the projects write them: requires-python in
// pyproject.toml, Poetry's caret, setup.cfg's python_requires, a literal
// in setup.py, classifiers, a CI matrix with an unquoted 3.10 and an
// include entry, tox's brace envlist and tox.toml's env_list.
func TestDetectPythonNeed(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  pythonNeed
	}{
		{"nothing", map[string]string{"x.py": ""}, pythonNeed{}},
		{"pyproject", map[string]string{"pyproject.toml": `[project]
name = "click"
requires-python = ">=3.10"
classifiers = [
    "Programming Language :: Python",
    "Typing :: Typed",
]
`}, pythonNeed{Spec: ">=3.10", SpecFrom: "pyproject.toml requires-python"}},
		{"poetry caret", map[string]string{"pyproject.toml": `[tool.poetry.dependencies]
python = "^3.8"
requests = "^2.28"
`}, pythonNeed{Spec: ">=3.8,<4.0", SpecFrom: "pyproject.toml [tool.poetry.dependencies] python"}},
		{"setup.cfg and classifiers", map[string]string{"setup.cfg": `[metadata]
name = attrs
classifiers =
    Programming Language :: Python :: 3.6
    Programming Language :: Python :: 3.7
    Programming Language :: Python :: 3.8

[options]
python_requires = >=3.6, <4
`}, pythonNeed{Spec: ">=3.6,<4", SpecFrom: "setup.cfg python_requires", Listed: []string{"3.6", "3.7", "3.8"}, ListedFrom: "trove classifiers"}},
		{"setup.py literal", map[string]string{"setup.py": `setup(
    name="six",
    python_requires=">=2.7, !=3.0.*, !=3.1.*",
    classifiers=[
        "Programming Language :: Python :: 2",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3.9",
    ],
)
`}, pythonNeed{Spec: ">=2.7,!=3.0.*,!=3.1.*", SpecFrom: "setup.py python_requires", Listed: []string{"3.9"}, ListedFrom: "trove classifiers"}},
		{"CI matrix wins over classifiers", map[string]string{
			"pyproject.toml": "[project]\nrequires-python = \">=3.8\"\nclassifiers = [\"Programming Language :: Python :: 3.12\"]\n",
			".github/workflows/tests.yml": `name: tests
on: [push]
jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: ruff check .
  tests:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python-version: ["3.8", "3.9", 3.10]
        include:
          - python-version: "3.11"
          - python-version: pypy-3.9
    steps:
      - uses: actions/setup-python@v5
      - run: pip install -e .
      - run: pytest
`}, pythonNeed{Spec: ">=3.8", SpecFrom: "pyproject.toml requires-python", Listed: []string{"3.8", "3.9", "3.10", "3.11"}, ListedFrom: ".github/workflows/tests.yml: job tests matrix"}},
		{"tox envlist", map[string]string{"tox.ini": `[tox]
envlist = py{37,38,39,310}-django{32,40}, lint, py3.11

[testenv]
commands = pytest
`}, pythonNeed{Listed: []string{"3.7", "3.8", "3.9", "3.10", "3.11"}, ListedFrom: "tox.ini envlist"}},
		{"tox.toml env_list", map[string]string{"tox.toml": `env_list = ["3.13", "3.12", "type", "docs"]
[env_run_base]
commands = [["pytest"]]
`}, pythonNeed{Listed: []string{"3.12", "3.13"}, ListedFrom: "tox.toml envlist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := detectPythonNeed(writeTree(t, tt.files))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("detectPythonNeed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSpecAllows(t *testing.T) {
	tests := []struct {
		spec, v string
		want    bool
	}{
		{"", "3.9", true},
		{">=3.8", "3.11", true},
		{">=3.8", "3.7", false},
		{">=3.8.1", "3.8", true},
		{">=3.8.1", "3.8.0", false},
		{">=3.6,<3.10", "3.10", false},
		{">=3.6,<3.10", "3.9.18", true},
		{"!=3.0.*,!=3.1.*,>=2.7", "3.1", false},
		{"!=3.0.*,!=3.1.*,>=2.7", "3.11", true},
		{"~=3.9", "3.13", true},
		{"~=3.9.0", "3.10", false},
		{"==3.11.*", "3.11.2", true},
		{">3.11", "3.11", false},
		{">=3.14", "3.13", false},
	}
	for _, tt := range tests {
		if got := specAllows(tt.spec, tt.v); got != tt.want {
			t.Errorf("specAllows(%q, %q) = %v, want %v", tt.spec, tt.v, got, tt.want)
		}
	}
}

func TestChoosePython(t *testing.T) {
	bases := []BasePython{{Ref: "bullseye", Python: "3.9.2"}, {Ref: "bookworm", Python: "3.11.2"}, {Ref: "trixie", Python: "3.13.5"}}
	tests := []struct {
		name     string
		need     pythonNeed
		flag     string
		portable bool
		want     env.PythonProvenance
		wantErr  string
	}{
		{"host satisfies", pythonNeed{Spec: ">=3.8", SpecFrom: "pyproject.toml requires-python"}, "", false,
			env.PythonProvenance{Requires: ">=3.8", From: "pyproject.toml requires-python >=3.8", Base: "host"}, ""},
		{"portable takes the newest allowed base", pythonNeed{Spec: ">=3.8", SpecFrom: "pyproject.toml requires-python"}, "", true,
			env.PythonProvenance{Requires: ">=3.8", From: "pyproject.toml requires-python >=3.8", Base: "trixie"}, ""},
		{"listed versions below the host's", pythonNeed{Listed: []string{"3.7", "3.8", "3.9"}, ListedFrom: "tox.ini envlist"}, "", false,
			env.PythonProvenance{From: "tox.ini envlist 3.7 3.8 3.9", Wanted: "3.9", Base: "bullseye"}, ""},
		{"nearest newer", pythonNeed{Spec: ">=3.8", SpecFrom: "setup.cfg python_requires", Listed: []string{"3.8", "3.10"}, ListedFrom: "trove classifiers"}, "", true,
			env.PythonProvenance{Requires: ">=3.8", From: "setup.cfg python_requires >=3.8; trove classifiers 3.8 3.10", Wanted: "3.10", Base: "bookworm", Note: "no base offers Python 3.10; the nearest newer one the project allows"}, ""},
		// sqlalchemy's: its CI tests only Pythons no base has, newer than
		// every base; requires-python allows the bases.
		{"listed only newer than every base", pythonNeed{Spec: ">=3.10", SpecFrom: "pyproject.toml requires-python", Listed: []string{"3.14", "3.15"}, ListedFrom: "a CI matrix"}, "", true,
			env.PythonProvenance{Requires: ">=3.10", From: "pyproject.toml requires-python >=3.10; a CI matrix 3.14 3.15", Wanted: "3.15", Base: "trixie",
				Note: "no base offers Python 3.15 or newer; the newest one pyproject.toml requires-python allows"}, ""},
		{"--python", pythonNeed{}, "3.9", false,
			env.PythonProvenance{From: "--python", Wanted: "3.9", Base: "bullseye"}, ""},
		{"--python the host has", pythonNeed{}, "3.11", false,
			env.PythonProvenance{From: "--python", Wanted: "3.11", Base: "host"}, ""},
		{"none allowed", pythonNeed{Spec: ">=3.14", SpecFrom: "pyproject.toml requires-python"}, "", false, env.PythonProvenance{},
			`requires-python ">=3.14": no base offers an allowed Python (bases: 3.9 bullseye, 3.11 bookworm, 3.13 trixie, 3.11 host); build one with cwm base build --debian SUITE`},
		{"upper bound below every base", pythonNeed{Spec: ">=3.6,<3.9", SpecFrom: "setup.py python_requires"}, "", false, env.PythonProvenance{},
			`requires-python ">=3.6,<3.9": no base offers an allowed Python (bases: 3.9 bullseye, 3.11 bookworm, 3.13 trixie, 3.11 host); build one with cwm base build --debian SUITE`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := choosePython(tt.need, tt.flag, "3.11.2", tt.portable, bases, "")
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("choosePython error = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("choosePython: %v", err)
			}
			if diff := cmp.Diff(tt.want, got.Prov); diff != "" {
				t.Errorf("choosePython (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChoosePythonBound: SQLAlchemy's commit of June 2022 lists 3.11, which
// came out in October (its greenlet of June does not compile there): the
// newest listed Python out before the commit's date bound is chosen.
func TestChoosePythonBound(t *testing.T) {
	bases := []BasePython{{Ref: "bullseye", Python: "3.9.2"}, {Ref: "bookworm", Python: "3.11.2"}, {Ref: "trixie", Python: "3.13.5"}}
	need := pythonNeed{Spec: ">=3.7", SpecFrom: "setup.cfg python_requires", Listed: []string{"3.7", "3.8", "3.9", "3.10", "3.11"}, ListedFrom: "trove classifiers"}
	got, err := choosePython(need, "", "3.11.2", true, bases, "2022-07-06T14:14:47Z")
	if err != nil || got.Prov.Base != "bullseye" || got.Prov.Note != "Python 3.11 came out after the commit's date bound (2022-07-06); the newest allowed one before it" {
		t.Errorf("choosePython(bound 2022-07-06) = %+v, %v; want bullseye (3.9) with a note", got.Prov, err)
	}
	if got, err := choosePython(need, "", "3.11.2", true, bases, "2023-01-01T00:00:00Z"); err != nil || got.Prov.Base != "bookworm" || got.Prov.Note != "" {
		t.Errorf("choosePython(bound 2023-01-01) = %+v, %v; want bookworm (3.11), no note", got.Prov, err)
	}
	if got, err := choosePython(need, "3.11", "3.11.2", true, bases, "2022-07-06T14:14:47Z"); err != nil || got.Prov.Base != "bookworm" {
		t.Errorf("choosePython(--python 3.11) = %+v, %v; want what was asked", got.Prov, err)
	}
	// SQLAlchemy at 2022-06-29: its CI lists 3.10 alone, which no base
	// has; the nearest newer (3.11) came out after the bound: 3.9.
	alone := pythonNeed{Spec: ">=3.7", SpecFrom: "setup.cfg python_requires", Listed: []string{"3.10"}, ListedFrom: "the CI matrix"}
	got, err = choosePython(alone, "", "3.11.2", true, bases, "2022-07-29T00:00:00Z")
	if err != nil || got.Prov.Base != "bullseye" || got.Prov.Note != "no base offers Python 3.10; the nearest newer one, 3.11, came out after the commit's date bound (2022-07-29); the newest allowed one before it" {
		t.Errorf("choosePython(3.10 alone, bound 2022-07-29) = %+v, %v; want bullseye (3.9) with a note", got.Prov, err)
	}
	if got, err := choosePython(alone, "", "3.11.2", true, bases, "2023-01-01T00:00:00Z"); err != nil || got.Prov.Base != "bookworm" {
		t.Errorf("choosePython(3.10 alone, bound 2023-01-01) = %+v, %v; want bookworm (3.11, the nearest newer)", got.Prov, err)
	}
}
