package envbuild

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestEvalExpression(t *testing.T) {
	ctx := exprContext{
		matrix: map[string]any{"python": "3.11", "tox": nil, "extras": []any{"a", "b"}, "os": "ubuntu-latest"},
		env:    map[string]any{"EXTRA": "-k fast"},
		inputs: map[string]any{"level": "full"},
	}
	tests := []struct{ expr, want string }{
		{"matrix.tox || format('py{0}', matrix.python)", "py3.11"},
		{"matrix.python && 'yes' || 'no'", "yes"},
		{"matrix.tox && 'yes' || 'no'", "no"},
		{"env.EXTRA", "-k fast"},
		{"inputs.level == 'FULL'", "true"},
		{"contains(matrix.os, 'ubuntu')", "true"},
		{"contains(matrix.extras, 'b')", "true"},
		{"startsWith(matrix.python, '3.1')", "true"},
		{"!startsWith(matrix.python, 'pypy')", "true"},
		{"join(matrix.extras, ',')", "a,b"},
		{"toJSON(matrix.extras)", "[\n  \"a\",\n  \"b\"\n]"},
		{"fromJSON('[1, 2]')[1]", "2"},
		{"runner.os == 'Windows'", "false"},
		{"matrix['python']", "3.11"},
		{"secrets.TOKEN", ""},
		{"format('{0}-{{x}}', 'a')", "a-{x}"},
		{"(1 < 2) && 'it''s'", "it's"},
	}
	for _, tt := range tests {
		v, err := evalExpression(tt.expr, ctx)
		if err != nil {
			t.Errorf("evalExpression(%q): %v", tt.expr, err)
			continue
		}
		if got := exprString(v); got != tt.want {
			t.Errorf("evalExpression(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
	if _, err := evalExpression("format('x'", ctx); err == nil {
		t.Errorf("evalExpression of an unclosed call: no error")
	}
}

func TestCollapseMatrix(t *testing.T) {
	dir := writeTree(t, map[string]string{".github/workflows/t.yml": `
on: push
jobs:
  tests:
    strategy:
      matrix:
        include:
          - {name: Windows, python: '3.11', os: windows-latest}
          - {python: '3.12'}
          - {python: '3.11'}
          - {name: PyPy, python: 'pypy-3.11', tox: pypy311}
    steps:
      - uses: actions/setup-python@v5
      - run: python -m pytest -e ${{ matrix.tox || format('py{0}', matrix.python) }} ${{ matrix.name }}
`})
	_, test, err := workflowCommands(dir, "3.11")
	if err != nil || len(test) != 1 {
		t.Fatalf("workflowCommands = %v, %v", test, err)
	}
	if want := "python -m pytest -e py3.11"; test[0].Command != want {
		t.Errorf("test command = %q, want %q", test[0].Command, want)
	}
}

// TestWorkflowRecipes checks recipes of CI workflows shaped like real ones
// that used to fail: uvx with tox-uv (boltons), uv run (sqlparse), a tox
// environment named by a matrix expression with tox configured in
// pyproject.toml (itsdangerous), steps skipped by if:, and inputs.
func TestWorkflowRecipes(t *testing.T) {
	project := "[project]\nname = \"x\"\nversion = \"1\"\n[build-system]\nrequires = [\"flit_core>=4\"]\nbuild-backend = \"flit_core.buildapi\"\n"
	tests := []struct {
		name    string
		files   map[string]string
		install []string
		test    string
	}{
		{"uvx tox-uv", map[string]string{
			"pyproject.toml": project,
			"tox.ini":        "[tox]\nenvlist = py311,docs\n[testenv]\ndeps = -rrequirements-test.txt\ncommands = pytest {posargs}\n[testenv:docs]\ncommands = sphinx-build docs out\n",
			".github/workflows/tests.yaml": `
jobs:
  tests:
    strategy:
      matrix:
        include:
          - { name: Linux, python: "3.14", os: ubuntu-latest, tox: py314 }
          - { name: Windows, python: "3.11", os: windows-latest, tox: py311 }
          - { name: "3.11", python: "3.11", os: ubuntu-latest, tox: py311 }
    steps:
      - uses: actions/setup-python@v5
        with: {python-version: "${{ matrix.python }}"}
      - run: uvx --with tox-uv tox -e ${{ matrix.tox }}
`},
			[]string{"pip install -rrequirements-test.txt <- tox.ini [testenv] deps", "pip install -e . <- tox.ini [testenv] (the package)"},
			"pytest <- .github/workflows/tests.yaml: job tests, step #2 -> tox.ini [testenv] commands"},
		{"a Windows job named for tests is not the recipe", map[string]string{
			"pyproject.toml": project,
			".github/workflows/main.yml": `
jobs:
  ubuntu:
    runs-on: ubuntu-latest
    steps:
      - run: python -m pip install .[test]
      - run: python -m pytest -n auto
  tests-windows:
    runs-on: windows-latest
    steps:
      - uses: actions/setup-python@v5
      - run: python -m pip install .[test] pywin32
      - run: python -m pytest
  mac:
    runs-on: [macos-14]
    steps:
      - uses: actions/setup-python@v5
      - run: python -m pip install .[test]
      - run: python -m pytest tests
`},
			[]string{"python -m pip install .[test] <- .github/workflows/main.yml: job ubuntu, step #1"},
			"python -m pytest -n auto <- .github/workflows/main.yml: job ubuntu, step #2"},
		{"uv run", map[string]string{
			"pyproject.toml": project + "[dependency-groups]\ndev = [\"pytest>=8\", \"ruff\", {include-group = \"extra\"}]\nextra = [\"hypothesis\"]\n",
			".github/workflows/app.yml": `
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: astral-sh/setup-uv@v5
      - run: uv run --group dev pytest tests/
      - if: matrix.python-version == '3.99'
        run: uv run --group dev ruff check .
      - if: runner.os == 'Windows'
        run: pip install pywin32
`},
			// uv run's sync as uv would do it (offline, it is pip install
			// -e . 'pytest>=8' hypothesis: TestUnwrapLine), the command
			// unwrapped.
			[]string{"uv sync --inexact --group dev <- .github/workflows/app.yml: job test, step #2"},
			"pytest tests/ <- .github/workflows/app.yml: job test, step #2" + uvRunNote},
		{"uv run tox run, tox in pyproject", map[string]string{
			"pyproject.toml": project + `[dependency-groups]
tests = ["pytest"]
[tool.tox]
env_list = ["py3.13", "typing"]
[tool.tox.env_run_base]
dependency_groups = ["tests"]
commands = [["pytest", "-v", "--tb=short", "--basetemp={env_tmp_dir}", {replace = "posargs", default = [], extend = true}]]
[tool.tox.env.typing]
commands = [["mypy"]]
`,
			".github/workflows/tests.yaml": `
on:
  workflow_dispatch:
    inputs:
      extra: {default: "-q"}
jobs:
  tests:
    name: ${{ matrix.name || matrix.python }}
    strategy:
      matrix:
        include:
          - {python: '3.13'}
          - {python: '3.11'}
          - {name: PyPy, python: 'pypy-3.11', tox: pypy311}
    steps:
      - uses: actions/setup-python@v5
      - run: uv run --locked tox run -e ${{ matrix.tox || format('py{0}', matrix.python) }} -- ${{ inputs.extra }}
`},
			[]string{"uv sync --inexact --locked <- .github/workflows/tests.yaml: job tests, step #2",
				"pip install pytest <- pyproject.toml [tool.tox] [testenv] deps", "pip install -e . <- pyproject.toml [tool.tox] [testenv] (the package)"},
			"pytest -v --tb=short --basetemp=/tmp/cwm-tox-env-tmp <- .github/workflows/tests.yaml: job tests, step #2" + uvRunNote + " -> pyproject.toml [tool.tox] [testenv] commands"},
		{"a job named for tests over primer, Pyodide and docker jobs", map[string]string{
			".github/workflows/ci.yml": `
jobs:
  primer:
    steps:
      - uses: actions/setup-python@v5
      - run: pytest primer
  pyodide:
    steps:
      - uses: actions/setup-python@v5
      - run: pytest --runtime pyodide
  linux:
    steps:
      - uses: actions/setup-python@v5
      - run: sudo apt-get update && sudo apt-get install -y docker-ce
      - run: pytest downstream
  test:
    steps:
      - uses: actions/setup-python@v5
      - run: pytest tests
`},
			nil, "pytest tests <- .github/workflows/ci.yml: job test, step #2"},
		{"a machine of its own scores down", map[string]string{
			".github/workflows/ci.yml": `
jobs:
  linux:
    steps:
      - uses: actions/setup-python@v5
      - run: sudo -E apt-get install -y docker-ce
      - run: pytest everything
  py:
    steps:
      - uses: actions/setup-python@v5
      - run: pytest tests
`},
			nil, "pytest tests <- .github/workflows/ci.yml: job py, step #2"},
		{"tox environments named for tests over type checkers", map[string]string{
			"tox.ini": "[tox]\nenvlist = mypy, py311-mypy, unit\n[testenv]\nskip_install = true\n" +
				"[testenv:a-mypy]\ncommands = pytest --mypy -m mypy src\n[testenv:lint]\ncommands = pytest --flake8\n[testenv:unit]\ncommands = pytest tests\n",
			".github/workflows/ci.yml": `
jobs:
  ci:
    steps:
      - uses: actions/setup-python@v5
      - run: tox -e py311-mypy
      - run: tox -e unit
`},
			nil, "pytest tests <- .github/workflows/ci.yml: job ci, step #3 -> tox.ini [testenv:unit] commands"},
		// networkx: a weekly run against other projects' development
		// versions (more install steps, so a higher score) loses to the
		// tests every push runs.
		{"a scheduled workflow", map[string]string{
			"pyproject.toml": project,
			".github/workflows/test.yml": `
on: [push, pull_request]
jobs:
  base:
    steps:
      - uses: actions/setup-python@v5
      - run: pip install .[test]
      - run: pytest --pyargs x
`,
			".github/workflows/weekly.yml": `
on:
  schedule:
    - cron: "0 0 * * 0"
  workflow_dispatch:
jobs:
  dispatch:
    steps:
      - uses: actions/setup-python@v5
      - run: pip install .[test]
      - run: pip install git+https://example.org/plugin.git
      - uses: actions/setup-python@v5
      - run: pytest --pyargs x -k dispatch
`},
			[]string{"pip install .[test] <- .github/workflows/test.yml: job base, step #2"}, "pytest --pyargs x <- .github/workflows/test.yml: job base, step #3"},
		// dvc: a job that checks out a plugin's repository and runs its
		// tests (its file first by name) loses to the repository's own.
		{"another repository's tests", map[string]string{
			"pyproject.toml": project,
			".github/workflows/plugin_tests.yaml": `
on: [pull_request]
jobs:
  tests:
    steps:
      - uses: actions/checkout@v6
        with:
          path: x
      - uses: actions/checkout@v6
        with:
          repository: org/x-plugin
          path: x-plugin
      - uses: actions/setup-python@v6
      - run: pip install -e ./x-plugin
      - run: cd x-plugin && pytest -v
`,
			".github/workflows/tests.yaml": `
on: [push, pull_request]
jobs:
  tests:
    steps:
      - uses: actions/checkout@v6
        with:
          repository: ${{ github.repository }}
      - uses: actions/setup-python@v6
      - run: pip install -e .[dev]
      - run: pytest -v
`},
			[]string{"pip install -e .[dev] <- .github/workflows/tests.yaml: job tests, step #3"}, "pytest -v <- .github/workflows/tests.yaml: job tests, step #4"},
		// pydantic: a job that installs the wheels another job built
		// (downloaded into dist/) loses to the one that builds its own.
		{"another job's artifacts", map[string]string{
			"pyproject.toml": project,
			".github/workflows/ci.yml": `
on: [push, pull_request]
jobs:
  core-test-builds-os:
    steps:
      - uses: actions/checkout@v6
      - uses: actions/setup-python@v6
      - uses: actions/download-artifact@v8
        with:
          path: dist
      - run: pip install x --no-index --find-links dist
      - run: pytest tests/core
  test:
    steps:
      - uses: actions/checkout@v6
      - run: pip install -e .[dev]
      - run: pytest -v
`},
			[]string{"pip install -e .[dev] <- .github/workflows/ci.yml: job test, step #2"}, "pytest -v <- .github/workflows/ci.yml: job test, step #3"},
		// aiohttp: a step that installs only tooling counts where the
		// pytest configuration imports it (a filterwarnings category in
		// coverage), and is dropped where it does not.
		{"tooling the pytest configuration imports", map[string]string{
			"pyproject.toml": project,
			"setup.cfg":      "[tool:pytest]\nfilterwarnings =\n    error\n    ignore:Couldn't import C tracer:coverage.exceptions.CoverageWarning\n",
			".github/workflows/ci.yml": `
jobs:
  test:
    steps:
      - run: pip install coverage
      - run: pip install tox
      - run: pip install -e .
      - run: pytest
`},
			[]string{"pip install coverage <- .github/workflows/ci.yml: job test, step #1", "pip install -e . <- .github/workflows/ci.yml: job test, step #3"}, "pytest <- .github/workflows/ci.yml: job test, step #4"},
		// pydantic: a job that sets up Rust to test the Rust core (first
		// in the file) and one that profiles memory (memray) lose to the
		// one that tests the Python package.
		{"another language's toolchain", map[string]string{
			"pyproject.toml": project,
			".github/workflows/ci.yml": `
on: [push, pull_request]
jobs:
  core-test-os:
    steps:
      - uses: actions/checkout@v6
      - uses: dtolnay/rust-toolchain@fa04a1451ff1842e2626ccb99004d0195b455a88
      - uses: astral-sh/setup-uv@v7
      - run: uv sync --all-packages --group testing-extra
      - run: uv run pytest tests/core
      - run: cargo test
        working-directory: core
  test-memray:
    steps:
      - uses: actions/checkout@v6
      - uses: astral-sh/setup-uv@v7
      - run: uv sync --all-packages --group testing-extra
      - run: uv run pytest --ignore=tests/mypy/ --memray
  test:
    steps:
      - uses: actions/checkout@v6
      - uses: astral-sh/setup-uv@v7
      - run: uv sync --all-packages --group testing-extra --all-extras
      - run: uv run pytest
`},
			[]string{"uv sync --all-packages --group testing-extra --all-extras <- .github/workflows/ci.yml: job test, step #3", "uv sync --inexact <- .github/workflows/ci.yml: job test, step #4"},
			"pytest <- .github/workflows/ci.yml: job test, step #4 (uv run unwrapped: the venv is uv's project environment)"},
		// sphinx's of 2022: a lint workflow whose matrix runs linters
		// through tox, first by file name, is not the tests.
		{"a lint workflow", map[string]string{
			"setup.py": "from setuptools import setup\nsetup(name='x')\n",
			"tox.ini":  "[testenv]\ncommands = python -m pytest {posargs}\n[testenv:docslint]\ncommands = python utils/doclinter.py\n[testenv:twine]\ncommands = twine check dist/*\n",
			".github/workflows/lint.yml": `
on: [push, pull_request]
jobs:
  build:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        tool: [docslint, flake8, twine]
    steps:
      - uses: actions/setup-python@v4
      - run: pip install -U tox
      - run: tox -e ${{ matrix.tool }}
`,
			".github/workflows/main.yml": `
on: [push, pull_request]
jobs:
  ubuntu:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/setup-python@v4
      - run: sudo apt-get install graphviz
      - run: python -m pip install -U pip tox
      - run: tox -e py -- -vv
`},
			[]string{"sudo apt-get install graphviz <- .github/workflows/main.yml: job ubuntu, step #2", "pip install -e . <- tox.ini [testenv] (the package)"},
			"python -m pytest <- .github/workflows/main.yml: job ubuntu, step #4 -> tox.ini [testenv] commands"},
		// dask's of 2022: the test job runs conda (not a candidate), and
		// the doctest job, which ignores every test file, is not the
		// suite: the project's own pytest configuration is.
		{"a doctest job", map[string]string{
			"setup.py":  "from setuptools import setup\nsetup(name='x')\n",
			"setup.cfg": "[tool:pytest]\naddopts = -rsx\n",
			".github/workflows/additional.yml": `
on: [push, pull_request]
jobs:
  doctest:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v2
      - uses: actions/setup-python@v4
      - run: pip install -e .
      - run: pytest -v --doctest-modules --ignore-glob='*/test_*.py' x
`},
			[]string{"pip install -e . <- setup.cfg"}, "python -m pytest <- setup.cfg [tool:pytest]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, tt.files)
			r, err := detectRecipe(dir, nil, "", "3.11", nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.install, cmds(r.Install), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("install mismatch (-want +got):\n%s", diff)
			}
			if got := r.Test.Command + " <- " + r.Test.Provenance; got != tt.test {
				t.Errorf("test = %q\nwant   %q", got, tt.test)
			}
		})
	}
}

// TestMissingProgramFallsBack checks that a source whose program the
// sandbox lacks (nox without a noxfile, poetry) is passed over for the
// next source, and that the provenance says so.
func TestMissingProgramFallsBack(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"setup.py": "from setuptools import setup\nsetup(name='x')\n",
		"tox.ini":  "[testenv]\ndeps = pytest\ncommands = pytest -q tests\n",
		".github/workflows/ci.yml": `
jobs:
  test:
    steps:
      - uses: actions/setup-python@v5
      - run: conda install --file requirements.txt
      - run: nox -s tests
`})
	have := func(p string) bool { return p != "nox" && p != "conda" }
	r, err := detectRecipe(dir, nil, "", "3.11", have)
	if err != nil {
		t.Fatal(err)
	}
	wantInstall := []string{
		"pip install pytest <- tox.ini [testenv] deps (passed over: .github/workflows/ci.yml: job test, step #2: conda not found)",
		"pip install -e . <- tox.ini [testenv] (the package)",
	}
	if diff := cmp.Diff(wantInstall, cmds(r.Install)); diff != "" {
		t.Errorf("install mismatch (-want +got):\n%s", diff)
	}
	want := "pytest -q tests <- tox.ini [testenv] commands (passed over: .github/workflows/ci.yml: job test, step #3: nox not found)"
	if got := r.Test.Command + " <- " + r.Test.Provenance; got != want {
		t.Errorf("test = %q\nwant   %q", got, want)
	}
	// With every program there, the workflow wins as before.
	r, _ = detectRecipe(dir, nil, "", "3.11", nil)
	if r.Test.Command != "nox -s tests" {
		t.Errorf("with every program: test = %q, want the workflow's", r.Test.Command)
	}
}

func TestFirstError(t *testing.T) {
	pip := `Obtaining file:///repo
  Preparing editable metadata (pyproject.toml): started
  error: subprocess-exited-with-error

  × Preparing editable metadata (pyproject.toml) did not run successfully.
  │ exit code: 1
  ╰─> [90 lines of output]
      configuration error: ` + "`project.license`" + ` must be valid exactly by one definition (2 matches found):
      Traceback (most recent call last):
      ValueError: invalid pyproject.toml config: ` + "`project.license`" + `.
      [end of output]

  note: This error originates from a subprocess, and is likely not a problem with pip.
error: metadata-generation-failed

× Encountered error while generating package metadata.
╰─> See above for output.

hint: See above for details.
`
	tests := []struct{ out, want string }{
		{pip, "configuration error: `project.license` must be valid exactly by one definition (2 matches found):"},
		{"      raise ConfigError(\n      flit_core.config.ConfigError: license field should be <class 'dict'>, not <class 'str'>\nhint: See above for details.\n",
			"flit_core.config.ConfigError: license field should be <class 'dict'>, not <class 'str'>"},
		{"ERROR: Invalid requirement: 'pytest>=7 ; nonsense'\n", "ERROR: Invalid requirement: 'pytest>=7 ; nonsense'"},
		{"building...\nall done badly\n", "all done badly"},
	}
	for _, tt := range tests {
		if got := firstError(tt.out); got != tt.want {
			t.Errorf("firstError(...) = %q, want %q", got, tt.want)
		}
	}
}

func TestToxFactorConditions(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"tox.ini": "[testenv]\ndeps =\n    lint: ruff\n    unit: hypothesis\ncommands =\n    lint: ruff check .\n    unit: pytest tests\n",
	})
	r := readTox(dir)
	if r == nil || r.test.Command != "pytest tests" {
		t.Fatalf("readTox = %+v, want the unit factor's pytest", r)
	}
	if got := cmds(r.install); len(got) != 1 || got[0] != "pip install hypothesis <- tox.ini [testenv] deps" {
		t.Errorf("readTox install = %q", got)
	}
}

// TestToxFactorAlternatives: conditions with spaces after their commas
// (astropy's "image, devpytest: scipy", "alldeps, docdeps: all"),
// generative ones (sqlfluff's "dbt{170,180}: ..."), and inline comments
// (scrapy's "bpython  # optional ...") are tox's, not requirements.
func TestToxFactorAlternatives(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"setup.py": "from setuptools import setup\nsetup(name='x')\n",
		"tox.ini": "[testenv]\ndeps =\n    image, devpytest: scipy\n    dbt{170,180}: -r constraints/{envname}.txt\n    py{311,312}-unit: attrs\n" +
			"    bpython  # optional for shell wrapper tests\n    pkg @ git+https://example.org/x.git#egg=pkg\n" +
			"extras =\n    test: test\n    alldeps, docdeps: all\n    docdeps: docs\ncommands = pytest tests\n\n[testenv:py312-unit]\n",
	})
	want := []string{"pip install attrs bpython <- tox.ini [testenv:py312-unit] deps", "pip install -e . <- tox.ini [testenv:py312-unit] (the package)"}
	if diff := cmp.Diff(want, cmds(readToxEnv(dir, "py312-unit").install)); diff != "" {
		t.Errorf("readToxEnv(py312-unit) install mismatch (-want +got):\n%s", diff)
	}
	want = []string{"pip install bpython <- tox.ini [testenv] deps", "pip install -e '.[all,docs]' <- tox.ini [testenv] (the package)"}
	if diff := cmp.Diff(want, cmds(readToxEnv(dir, "docdeps").install)); diff != "" {
		t.Errorf("readToxEnv(docdeps) install mismatch (-want +got):\n%s", diff)
	}
	// [testenv] for no environment in particular: a test factor's extras.
	want = []string{"pip install bpython <- tox.ini [testenv] deps", "pip install -e '.[test]' <- tox.ini [testenv] (the package)"}
	if diff := cmp.Diff(want, cmds(readToxEnv(dir, "").install)); diff != "" {
		t.Errorf("readToxEnv() install mismatch (-want +got):\n%s", diff)
	}
}

func TestUnwrapLine(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"pyproject.toml": `[project]
name = "x"
[project.optional-dependencies]
yaml = ["pyyaml"]
[tool.poetry.group.dev.dependencies]
pytest = "^7"
python = "^3.9"
[dependency-groups]
test = ["pytest-mock"]
`})
	tests := []struct {
		line string
		want []string
	}{
		{"uv run --locked --extra yaml pytest -q", []string{"pip install -e '.[yaml]' pytest", "pytest -q"}},
		{"uv run --no-project --with hypothesis python -m pytest", []string{"pip install pytest hypothesis", "python -m pytest"}},
		{"uvx --with tox-uv tox -e py311", []string{"tox -e py311"}},
		{"uv tool run nox -s tests", []string{"nox -s tests"}},
		{"pipx run nox -s tests", []string{"nox -s tests"}},
		{"cd sub && uv pip install --system -r req.txt", []string{"cd sub && pip install -r req.txt"}},
		{"uv sync --all-extras --group test", []string{"pip install -e '.[yaml]' pytest pytest-mock"}},
		{"poetry install --with test", []string{"pip install -e . pytest pytest-mock"}},
		{"poetry run pytest -q tests/", []string{"pytest -q tests/"}},
		{"pdm run -v pytest tests", []string{"pytest tests"}},
		{"python -m pytest", []string{"python -m pytest"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, unwrapLine(tt.line, dir)); diff != "" {
			t.Errorf("unwrapLine(%q) mismatch (-want +got):\n%s", tt.line, diff)
		}
	}
}

func TestMakeCheckThatLints(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"Makefile": "check:\n\truff check .\n\ntest:\n\tpython -m unittest discover -s tests\n",
		".github/workflows/ci.yml": `
jobs:
  build:
    steps:
      - uses: actions/setup-python@v5
      - run: make check
      - run: make test
`})
	r, err := detectRecipe(dir, nil, "", "3.11", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "python -m unittest discover -s tests"; r.Test.Command != want {
		t.Errorf("test = %q (%s), want %q", r.Test.Command, r.Test.Provenance, want)
	}
}

func TestStepDirectoryAndToxGlobs(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"tox.ini": "[testenv]\ncommands = python -m unittest discover -p *_test.py\n",
		".github/workflows/ci.yml": `
jobs:
  tests:
    steps:
      - uses: actions/setup-python@v5
      - run: |
          cd src
          python -We -m coverage run -m unittest test_x.py
`})
	_, test, err := workflowCommands(dir, "3.11")
	if err != nil || len(test) != 1 || test[0].Command != "cd src && python -We -m coverage run -m unittest test_x.py" {
		t.Errorf("workflowCommands test = %+v, %v; want the step's cd applied", test, err)
	}
	if r := readTox(dir); r == nil || r.test.Command != "python -m unittest discover -p '*_test.py'" {
		t.Errorf("readTox test = %+v, want the pattern quoted", r)
	}
}

// TestSubstituteTox: tox's substitutions, one inside another's default
// (sqlfluff's {posargs: "{toxinidir}/test"} was cut at its first brace).
func TestSubstituteTox(t *testing.T) {
	tests := []struct{ in, want string }{
		{`pytest -vv {posargs: "{toxinidir}/test"}`, `pytest -vv "./test"`},
		{"pytest {posargs:tests} --basetemp={envtmpdir}", "pytest tests --basetemp=/tmp/cwm-tox-env-tmp"},
		{"{envpython} -m pytest {env:PYTEST_ADDOPTS:-q} {posargs}", "python -m pytest -q"},
		{"pytest {env:ARGS:{posargs:tests}}", "pytest tests"},
		{"pytest {toxinidir}{/}tests", "pytest ./tests"},
	}
	for _, tt := range tests {
		if got := substituteTox(tt.in); got != tt.want {
			t.Errorf("substituteTox(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
