package envbuild

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestKeepUV: uv install lines stay as written, uv run becomes the sync
// it performs and its command, and what an offline build translates
// them to is what unwrapLine made of the line before (the same pip
// install).
func TestKeepUV(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"pyproject.toml": `[project]
name = "x"
[project.optional-dependencies]
yaml = ["pyyaml"]
[dependency-groups]
dev = ["pytest"]
test = ["pytest-mock"]
`})
	tests := []struct {
		line      string
		want      []ciLine
		offline   []string // the install lines unwrapped, as offline runs them
		unwrapped []string // unwrapLine of the original line, without the command
	}{
		{"uv run --locked --extra yaml pytest -q",
			[]ciLine{{line: "uv sync --inexact --locked --extra yaml"}, {line: "pytest -q", note: uvRunNote}},
			[]string{"pip install -e '.[yaml]' pytest"}, []string{"pip install -e '.[yaml]' pytest"}},
		{"cd sub && uv run --group=test --with hypothesis python -m pytest",
			[]ciLine{{line: "cd sub && uv sync --inexact --group=test"}, {line: "cd sub && uv pip install hypothesis"}, {line: "cd sub && python -m pytest", note: uvRunNote}},
			nil, nil},
		{"uv run --no-sync pytest", []ciLine{{line: "pytest", note: uvRunNote}}, nil, nil},
		{"uv sync --all-extras --group test", []ciLine{{line: "uv sync --all-extras --group test"}},
			[]string{"pip install -e '.[yaml]' pytest pytest-mock"}, []string{"pip install -e '.[yaml]' pytest pytest-mock"}},
		{"python -m uv pip install --system -r req.txt", []ciLine{{line: "python -m uv pip install --system -r req.txt"}},
			[]string{"pip install -r req.txt"}, []string{"pip install -r req.txt"}},
		{"uvx --with tox-uv tox -e py311", []ciLine{{line: "tox -e py311"}}, nil, nil},
		{"python -m pytest", []ciLine{{line: "python -m pytest"}}, nil, nil},
	}
	for _, tt := range tests {
		got := keepUV(tt.line, dir)
		if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(ciLine{})); diff != "" {
			t.Errorf("keepUV(%q) mismatch (-want +got):\n%s", tt.line, diff)
		}
		if tt.offline == nil {
			continue
		}
		var offline []string
		for _, l := range got {
			if isUVInstall(l.line) {
				offline = append(offline, unwrapLine(l.line, dir)...)
			}
		}
		if diff := cmp.Diff(tt.offline, offline); diff != "" {
			t.Errorf("keepUV(%q) translated for pip (-want +got):\n%s", tt.line, diff)
		}
		unwrapped := unwrapLine(tt.line, dir)
		if len(got) > 1 {
			unwrapped = unwrapped[:len(unwrapped)-1]
		}
		if diff := cmp.Diff(tt.unwrapped, unwrapped); diff != "" {
			t.Errorf("unwrapLine(%q) (-want +got):\n%s", tt.line, diff)
		}
	}
}

// TestUVLine: a uv install line as an online build runs it.
func TestUVLine(t *testing.T) {
	tests := []struct {
		line   string
		frozen bool
		want   string
	}{
		{"uv sync --python 3.13 --no-default-groups --group test $EXTRA", true, uvBin + " sync --no-default-groups --group test $EXTRA --frozen"},
		{"uv sync --locked --extra yaml", true, uvBin + " sync --extra yaml --frozen"},
		{"uv sync --locked --extra yaml", false, uvBin + " sync --locked --extra yaml"},
		{"cd sub && FOO=1 python -m uv pip install --system --python=3.12 -e .", true, "cd sub && FOO=1 " + uvBin + " pip install -e ."},
	}
	for _, tt := range tests {
		if got := uvLine(tt.line, tt.frozen); got != tt.want {
			t.Errorf("uvLine(%q, %v) = %q, want %q", tt.line, tt.frozen, got, tt.want)
		}
	}
}

// TestUVCommand: what a Makefile recipe runs through uv.
func TestUVCommand(t *testing.T) {
	tests := []struct {
		line string
		want string
		ok   bool
	}{
		{"uv run --no-sync pytest -n auto --cov=seaborn tests", "pytest -n auto --cov=seaborn tests", true},
		{"uvx --with tox-uv tox -e py", "tox -e py", true},
		{"uv tool run nox -s tests", "nox -s tests", true},
		{"pytest tests", "pytest tests", false},
		{"uv sync", "uv sync", false},
	}
	for _, tt := range tests {
		if got, ok := uvCommand(tt.line); got != tt.want || ok != tt.ok {
			t.Errorf("uvCommand(%q) = %q, %v; want %q, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

// TestMakeTargetThroughUV: seaborn's CI runs make test, whose recipe runs
// pytest through uv run; the test command is pytest's (no "uv not found"
// passing it over), its provenance saying so.
func TestMakeTargetThroughUV(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"Makefile": "test:\n\tuv run --no-sync pytest -n auto --cov=seaborn tests\n\nlint:\n\tuv run --no-sync ruff check seaborn/\n",
		".github/workflows/ci.yaml": `
jobs:
  run-tests:
    strategy:
      matrix:
        python: ["3.13"]
    steps:
      - uses: astral-sh/setup-uv@v5
      - name: Install seaborn
        run: |
          EXTRA=""; if [[ ${{ matrix.install }} == 'full' ]]; then EXTRA='--extra stats'; fi
          uv sync --python ${{ matrix.python }} --no-default-groups --group test $EXTRA
      - name: Run tests
        run: make test
`,
		"pyproject.toml": "[project]\nname = \"seaborn\"\n[dependency-groups]\ntest = [\"pytest\"]\n",
	})
	have := func(prog string) bool { return prog != "uv" }
	r, err := detectRecipe(dir, nil, "", "3.13", have)
	if err != nil {
		t.Fatal(err)
	}
	want := ".github/workflows/ci.yaml: job run-tests, step Run tests -> Makefile target test" + uvRunNote
	if r.Test.Command != "pytest -n auto --cov=seaborn tests" || r.Test.Provenance != want {
		t.Errorf("detectRecipe test = %q [%s], want pytest -n auto --cov=seaborn tests [%s]", r.Test.Command, r.Test.Provenance, want)
	}
	if len(r.Install) != 1 || r.Install[0].Command != "uv sync --python 3.13 --no-default-groups --group test $EXTRA" {
		t.Errorf("detectRecipe install = %+v, want the CI's uv sync as written", r.Install)
	}
}
