package envbuild

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"cwm/internal/env"
	"cwm/internal/testrun"
)

func cmds(steps []env.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Command+" <- "+s.Provenance)
	}
	return out
}

func TestDetectRecipe(t *testing.T) {
	tests := []struct {
		repo    string
		install []string
		test    string
	}{
		{"../../examples/textkit", []string{"pip install -e .[test] <- .github/workflows/ci.yml: job test, step Install"},
			"pytest -q <- .github/workflows/ci.yml: job test, step Test"},
		{"testdata/toxonly", []string{"pip install 'pytest>=7' <- tox.ini [testenv] deps"},
			"pytest -q tests <- tox.ini [testenv] commands"},
		{"testdata/wfonly", nil,
			"PYTHONPATH=src python3.11 -m pytest --cov=greet -x tests <- .github/workflows/tests.yaml: job unit, step Unit tests"},
		{"testdata/bareunit", nil, "python -m unittest discover -s tests <- default (unittest: no pytest in the tests)"},
		{"testdata/setuppy", []string{"pip install -e .[test] <- setup.py", "pip install -r requirements.txt <- requirements.txt", "pip install -r requirements-dev.txt <- requirements-dev.txt"},
			"python -m pytest <- default (pytest)"},
		{"testdata/missingdep", []string{"pip install -e . <- pyproject.toml"}, "python -m pytest <- default (pytest)"},
	}
	for _, tt := range tests {
		r, err := detectRecipe(tt.repo, nil, "", "3.11", nil)
		if err != nil {
			t.Errorf("detectRecipe(%s): %v", tt.repo, err)
			continue
		}
		if diff := cmp.Diff(tt.install, cmds(r.Install), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("detectRecipe(%s) install mismatch (-want +got):\n%s", tt.repo, diff)
		}
		if got := r.Test.Command + " <- " + r.Test.Provenance; got != tt.test {
			t.Errorf("detectRecipe(%s) test = %q, want %q", tt.repo, got, tt.test)
		}
	}
}

func TestDetectRecipeFlagsWin(t *testing.T) {
	r, err := detectRecipe("../../examples/textkit", []string{"pip install ."}, "pytest tests/test_case.py", "3.11", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Recipe{Install: []env.Step{{Command: "pip install .", Provenance: "flag --install"}},
		Test: env.Step{Command: "pytest tests/test_case.py", Provenance: "flag --test"}}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("detectRecipe with flags mismatch (-want +got):\n%s", diff)
	}
}

// writeTree creates files (path -> content) under a temporary directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestDetectRecipeDelegation(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		test  string
	}{
		{"workflow runs tox", map[string]string{
			".github/workflows/ci.yml": "jobs:\n  t:\n    steps:\n      - uses: actions/setup-python@v5\n      - run: pip install tox\n      - run: tox -e py\n",
			"tox.ini":                  "[testenv]\ncommands = python -m pytest {posargs} -q\n",
		}, "python -m pytest -q <- .github/workflows/ci.yml: job t, step #3 -> tox.ini [testenv] commands"},
		{"make test", map[string]string{
			"Makefile": "PY ?= python3\nTESTS = tests\n\nlint:\n\truff .\n\ntest: lint\n\t@echo running\n\t$(PY) -m pytest $(TESTS)\n",
		}, "python3 -m pytest tests <- Makefile target test"},
		{"nox", map[string]string{
			"noxfile.py": "import nox\n\n@nox.session\ndef tests(session):\n    session.install('-e', '.[test]')\n    session.run('pytest', '-q', *session.posargs)\n",
		}, "pytest -q <- noxfile.py session.run"},
		{"pytest config", map[string]string{
			"setup.cfg": "[metadata]\nname = x\n\n[tool:pytest]\ntestpaths = tests\n",
		}, "python -m pytest <- setup.cfg [tool:pytest]"},
		{"working directory", map[string]string{
			".github/workflows/ci.yml": "jobs:\n  t:\n    defaults:\n      run:\n        working-directory: pkg\n    steps:\n      - uses: actions/setup-python@v5\n      - run: python -m pytest\n",
		}, "cd pkg && python -m pytest <- .github/workflows/ci.yml: job t, step #2"},
	}
	for _, tt := range tests {
		r, err := detectRecipe(writeTree(t, tt.files), nil, "", "3.11", nil)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got := r.Test.Command + " <- " + r.Test.Provenance; got != tt.test {
			t.Errorf("%s: test = %q, want %q", tt.name, got, tt.test)
		}
	}
}

// TestNoxDependencyGroups: pypa/packaging's noxfile installs
// *nox.project.dependency_groups(PYPROJECT, "test") and "-e.": the
// group's requirements (read from pyproject.toml), not a package named
// "test", and the project, all as one session's steps.
func TestNoxDependencyGroups(t *testing.T) {
	repo := writeTree(t, map[string]string{
		"pyproject.toml": "[project]\nname = \"p\"\n\n[dependency-groups]\ntest = [\"pytest>=8\", \"hypothesis\"]\ndocs = [\"sphinx\"]\n",
		"noxfile.py": "import nox\n\nPYPROJECT = nox.project.load_toml()\n\n@nox.session\ndef tests(session):\n" +
			"    session.install(\n        *HYPOTHESIS_BINARY_ONLY, *nox.project.dependency_groups(PYPROJECT, \"test\")\n    )\n" +
			"    session.install(\"-e.\")\n    session.run(\"pytest\", *session.posargs, env={\"A\": \"b\"})\n",
	})
	r := readNox(repo)
	if r == nil {
		t.Fatal("readNox = nil")
	}
	want := &runnerRecipe{
		install: []env.Step{
			{Command: "pip install 'pytest>=8' hypothesis", Provenance: "noxfile.py session.install"},
			{Command: "pip install -e.", Provenance: "noxfile.py session.install"},
		},
		test: env.Step{Command: "pytest", Provenance: "noxfile.py session.run"},
	}
	if diff := cmp.Diff(want, r, cmp.AllowUnexported(runnerRecipe{})); diff != "" {
		t.Errorf("readNox mismatch (-want +got):\n%s", diff)
	}
}

func TestParsePip(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"requirements.txt":     "-r base.txt\nrequests>=2 ; python_version > '3'  # net\n--index-url https://x\nflake8\n-e .\n",
		"base.txt":             "attrs==22.2.0 --hash=sha256:abc\n",
		"requirements-dev.txt": "",
		"pyproject.toml":       "[project]\nname = \"Pkg\"\n\n[dependency-groups]\ndev = [\"pydicom-data\", \"pytest-cov\", \"pkg[io]\", {include-group = \"test\"}]\ntest = [\"pyfakefs>=6.2.0\"]\n",
		"sub/pyproject.toml":   "[project]\nname = \"sub\"\n\n[dependency-groups]\nci = [\"sub\", \"attrs\"]\n",
	})
	tests := []struct {
		line string
		want pipPlan
		ok   bool
	}{
		{"pip install -e .[test]", pipPlan{editable: []string{".[test]"}, extras: []string{"test"}}, true},
		{"python -m pip install --upgrade pip setuptools wheel", pipPlan{dropped: []string{"--upgrade", "pip", "setuptools", "wheel"}}, true},
		{"pip3 install -U --user -r requirements.txt", pipPlan{editable: []string{"."}, reqs: []string{"attrs==22.2.0", "requests>=2 ; python_version > '3'"},
			dropped: []string{"-U", "--user", "flake8"}}, true},
		{"python setup.py develop", pipPlan{editable: []string{"."}}, true},
		{"pip install -e.", pipPlan{editable: []string{"."}}, true},
		{"pip install -i https://index.example/simple numpy", pipPlan{reqs: []string{"numpy"}, dropped: []string{"-i", "https://index.example/simple"}}, true},
		{"python -m pip install --group dev . -e .[test]", pipPlan{editable: []string{".[io,test]"}, extras: []string{"io", "test"},
			reqs: []string{"pydicom-data", "pyfakefs>=6.2.0"}, dropped: []string{"pytest-cov"}}, true},
		{"pip install --group=sub/pyproject.toml:ci", pipPlan{editable: []string{"./sub"}, reqs: []string{"attrs"}}, true},
		{"pip install --group nosuch", pipPlan{}, true},
		// aiohttp's CI: python's flags joined to -m.
		{"python -Im pip install -U build -r requirements-dev.txt", pipPlan{dropped: []string{"-U", "build"}}, true},
		{"python3 -I -m pip install numpy", pipPlan{reqs: []string{"numpy"}}, true},
		{"python -Im pytest", pipPlan{}, false},
		{"pip list", pipPlan{}, false},
		{"make install", pipPlan{}, false},
	}
	for _, tt := range tests {
		cmds, _, err := testrun.Words(tt.line)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := parsePip(cmds[0], dir)
		if ok != tt.ok {
			t.Errorf("parsePip(%q) ok = %v, want %v", tt.line, ok, tt.ok)
			continue
		}
		if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(pipPlan{}), cmpopts.EquateEmpty()); ok && diff != "" {
			t.Errorf("parsePip(%q) mismatch (-want +got):\n%s", tt.line, diff)
		}
	}
}

// TestKeepEnvTooling: a tox environment's deps keep the setuptools and
// wheel they name (lxml's, for its make test's setup.py on 3.13); other
// pip lines drop them as tooling.
func TestKeepEnvTooling(t *testing.T) {
	cmds, _, err := testrun.Words(`pip install -U html5lib "setuptools;python_version >= '3.12'" wheel tox-uv`)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := parsePip(cmds[0], t.TempDir())
	p.keepTooling(func(n string) bool { return envTooling[n] })
	want := pipPlan{reqs: []string{"html5lib", "setuptools;python_version >= '3.12'", "wheel"}, dropped: []string{"-U", "tox-uv"}}
	if diff := cmp.Diff(want, p, cmp.AllowUnexported(pipPlan{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("keepTooling mismatch (-want +got):\n%s", diff)
	}
	for prov, want := range map[string]bool{
		"tox.ini [testenv] deps":                                 true,
		"pyproject.toml [tool.tox] [env.test] deps":              true,
		"ci.yml: job test, step #3 -> tox.ini [testenv:py] deps": true,
		"tox.ini [testenv] (the package)":                        false,
		"ci.yml: job test, step Install deps":                    false,
		"noxfile.py session.install":                             false,
	} {
		if got := isToxDeps(&env.Step{Provenance: prov}); got != want {
			t.Errorf("isToxDeps(%q) = %v, want %v", prov, got, want)
		}
	}
}

func TestPipCommand(t *testing.T) {
	p := pipPlan{editable: []string{".[test]"}, reqs: []string{"requests>=2"}, noDeps: true}
	tests := []struct {
		in   installer
		want string
	}{
		{installer{mode: env.ModeOffline},
			"python -m pip install --disable-pip-version-check --no-input --no-index --no-build-isolation --no-deps -e '.[test]' 'requests>=2'"},
		{installer{mode: env.ModeOnline, exclude: "2024-05-08T00:00:00Z"},
			"/venv/bin/python /cwm-tools/cwm-pip.py install --disable-pip-version-check --no-input --use-feature=inprocess-build-deps --no-compile --report /tmp/r.json --uploaded-prior-to=2024-05-08T00:00:00Z --no-deps -e '.[test]' 'requests>=2'"},
		{installer{mode: env.ModeWheelhouse},
			"/venv/bin/python /cwm-tools/cwm-pip.py install --disable-pip-version-check --no-input --use-feature=inprocess-build-deps --no-compile --report /tmp/r.json --no-index --find-links /cwm-tools/wheelhouse --no-deps -e '.[test]' 'requests>=2'"},
	}
	for _, tt := range tests {
		if got := p.command(tt.in.pipWords("/tmp/r.json")); got != tt.want {
			t.Errorf("command(%s) = %q, want %q", tt.in.mode, got, tt.want)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		line string
		want lineKind
	}{
		{"pip install -e .", kindInstall},
		{"python -m pip install -r requirements.txt", kindInstall},
		{"sudo apt-get install -y libxml2-dev", kindInstall},
		{"python setup.py develop", kindInstall},
		{"pytest -q", kindTest},
		{"python -m pytest tests", kindTest},
		{"python -m unittest discover", kindTest},
		{"nox -s docs", kindOther},
		{"tox -e lint,py311", kindOther},
		{"nox --session tests-3.11", kindTest},
		{"uvx --with tox-uv tox -e py311", kindTest},
		{"uv tool install --python 3.14 tox --with tox-uv", kindOther},
		{"tox run -vv --notest -e 3.11", kindOther},
		{"tox -e py", kindTest},
		{"tox -e docslint", kindOther}, // sphinx's of 2022, chosen as its tests by file name
		{"tox -e du18 -- -vv", kindTest},
		{"make test", kindTest},
		{"coverage run -m pytest", kindTest},
		{"echo pytest-free", kindOther},
		{"ruff check .", kindOther},
		{"python -m build", kindOther},
	}
	for _, tt := range tests {
		if got := classify(tt.line); got != tt.want {
			t.Errorf("classify(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}

func TestMergeRuns(t *testing.T) {
	rep := func(outcomes map[string]testrun.Outcome) *testrun.Report {
		r := &testrun.Report{}
		for id, o := range outcomes {
			r.Tests = append(r.Tests, testrun.Test{ID: id, Outcome: o})
		}
		return r
	}
	reps := []*testrun.Report{
		rep(map[string]testrun.Outcome{"a": testrun.Pass, "b": testrun.Pass, "c": testrun.Skip, "d": testrun.Fail}),
		rep(map[string]testrun.Outcome{"a": testrun.Pass, "b": testrun.Fail, "c": testrun.Skip, "d": testrun.Fail, "e": testrun.Pass}),
	}
	got, _, counts := mergeRuns(reps)
	status := map[string]string{}
	for _, tr := range got {
		status[tr.ID] = tr.Status
	}
	want := map[string]string{"a": "pass", "b": "flaky", "c": "skip", "d": "fail", "e": "flaky"}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("mergeRuns statuses mismatch (-want +got):\n%s", diff)
	}
	if want := (env.Counts{Tests: 5, Pass: 1, Fail: 1, Skip: 1, Flaky: 2}); counts != want {
		t.Errorf("mergeRuns counts = %v, want %v", counts, want)
	}
	// A skip is never a pass: a suite that only skips is unusable.
	if r := unusableReason(env.Counts{Tests: 2, Skip: 2}, nil, nil, nil); r == "" {
		t.Errorf("unusableReason(all skipped) = \"\", want a reason")
	}
}

// TestReadTox reads tox environments: deps with their requirement files
// (-rfile, or -r file as two words), dependency groups named under factor
// conditions (each installed once), and the test command.
func TestReadTox(t *testing.T) {
	cases := []struct {
		name    string
		files   map[string]string
		install []string
		test    string
	}{
		{"envlist", map[string]string{
			"setup.py": "from setuptools import setup\nsetup(name='x')\n",
			"tox.ini": "[tox]\nenvlist = py311, lint\n\n[testenv]\ndeps =\n    pytest\n    -rrequirements.txt\n\n" +
				"[testenv:lint]\nskip_install = true\ndeps = ruff\ncommands = ruff check .\n\n" +
				"[testenv:py311]\ncommands =\n    - python -m pytest {posargs:tests} --tb=short\n",
		}, []string{"pip install pytest -rrequirements.txt <- tox.ini [testenv:py311] deps", "pip install -e . <- tox.ini [testenv:py311] (the package)"},
			"python -m pytest tests --tb=short <- tox.ini [testenv:py311] commands"},
		{"requirement files and groups", map[string]string{
			"pyproject.toml": "[project]\nname = \"x\"\nversion = \"1\"\n\n[dependency-groups]\ntest = [\"attrs\", \"pytest>=7\"]\ntyping = [\"mypy\"]\n",
			"tox.ini": "[tox]\nenvlist = py311\n\n[testenv]\ndeps =\n    -r requirements/test.txt\n    -c constraints.txt\n" +
				"dependency_groups =\n    py39: test\n    py310: test\n    py311: test\n    py312: test\n    type: typing\n" +
				"commands = pytest tests\n",
		}, []string{"pip install -r requirements/test.txt -c constraints.txt attrs 'pytest>=7' <- tox.ini [testenv] deps",
			"pip install -e . <- tox.ini [testenv] (the package)"},
			"pytest tests <- tox.ini [testenv] commands"},
		// lxml's: setuptools in deps stays, its tests run setup.py.
		{"setuptools in deps", map[string]string{
			"setup.py": "from setuptools import setup\nsetup(name='x')\n",
			"tox.ini":  "[testenv]\ndeps =\n    html5lib\n    setuptools;python_version >= '3.12'\n    tox-uv\ncommands =\n    pytest\n",
		}, []string{`pip install html5lib 'setuptools;python_version >= '\''3.12'\''' <- tox.ini [testenv] deps`, "pip install -e . <- tox.ini [testenv] (the package)"},
			"pytest <- tox.ini [testenv] commands"},
		// black's: the package installed by a command before the tests.
		{"install commands", map[string]string{
			"pyproject.toml": "[project]\nname = \"x\"\nversion = \"1\"\n\n[dependency-groups]\ntests = [\"pytest>=7\", \"coverage\"]\n",
			"tox.ini": "[testenv]\nskip_install = True\ndependency_groups = tests\ncommands =\n    pip install -e .[d]\n    coverage erase\n" +
				"    pytest tests --run-optional no_jupyter \\\n        --numprocesses auto \\\n        --cov {posargs}\n    pip install -e .[jupyter]\n    pytest tests -m jupyter\n",
		}, []string{"pip install 'pytest>=7' <- tox.ini [testenv] deps", "pip install -e '.[d]' <- tox.ini [testenv] commands"},
			"pytest tests --run-optional no_jupyter --numprocesses auto --cov <- tox.ini [testenv] commands"},
		// scrapy's and SQLAlchemy's deps name another section's:
		// {[section]key}, expanded (and theirs in turn), its factor
		// conditions applied as the environment's own lines.
		{"references to other sections", map[string]string{
			"setup.py": "from setuptools import setup\nsetup(name='x')\n",
			"tox.ini": "[test-requirements]\ndeps =\n    pytest\n    testfixtures\n\n[testenv]\ndeps =\n    {[test-requirements]deps}\n    mypy: mypy\n" +
				"commands = {[base]commands} {posargs}\n\n[base]\ncommands = pytest -q {[nowhere]thing}tests\n\n[testenv:extra]\ndeps =\n    {[testenv]deps}\n    Pillow\n",
		}, []string{"pip install pytest testfixtures <- tox.ini [testenv] deps", "pip install -e . <- tox.ini [testenv] (the package)"},
			"pytest -q tests <- tox.ini [testenv] commands"},
		// conan's of 2022: an inline comment after the command, and tox
		// 3's [] for the positional arguments.
		{"inline comment and old posargs", map[string]string{
			"setup.py": "from setuptools import setup\nsetup(name='x')\n",
			"tox.ini": "[tox]\n\n[testenv]\ndeps = -rconans/requirements_dev.txt\n" +
				"commands = pytest -m \"not slow and not tool_svn\" [] # substitute with tox' positional arguments\n",
		}, []string{"pip install -rconans/requirements_dev.txt <- tox.ini [testenv] deps", "pip install -e . <- tox.ini [testenv] (the package)"},
			"pytest -m \"not slow and not tool_svn\" <- tox.ini [testenv] commands"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := readTox(writeTree(t, c.files))
			if r == nil {
				t.Fatal("readTox = nil")
			}
			if diff := cmp.Diff(c.install, cmds(r.install)); diff != "" {
				t.Errorf("readTox install mismatch (-want +got):\n%s", diff)
			}
			if got := r.test.Command + " <- " + r.test.Provenance; got != c.test {
				t.Errorf("readTox test = %q, want %q", got, c.test)
			}
		})
	}
}

// TestProjectTestGroup: a project whose CI installs through a tool cwm
// does not run (xarray's pixi) keeps its test requirements in a PEP 735
// group; the fallback recipe installs it, tooling left out, and a
// requirement on the project itself ("xarray[complete]") becomes extras
// of the project's own editable install instead of a download of it.
func TestProjectTestGroup(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		install []string
	}{
		{"dev group with the project's own extras", map[string]string{
			"pyproject.toml": "[project]\nname = \"Xarray\"\n\n[project.optional-dependencies]\nio = [\"netCDF4\"]\n\n" +
				"[dependency-groups]\ndev = [\"hypothesis\", \"mypy==1.19.1\", \"pytest\", \"pytest-asyncio\", \"pytz\", " +
				"\"pytest-asyncio\", \"xarray[io,viz]\", \"pandas>=2; python_version>'3.9'\", {include-group = \"extra\"}]\nextra = [\"tzdata\"]\n",
		}, []string{
			"pip install -e .[io,viz] <- pyproject.toml",
			"pip install hypothesis pytest pytest-asyncio pytz 'pandas>=2; python_version>'\\''3.9'\\''' tzdata <- pyproject.toml [dependency-groups] dev",
		}},
		{"a test group wins over dev, with a test extra", map[string]string{
			"pyproject.toml": "[project]\nname = \"p\"\n\n[project.optional-dependencies]\ntest = [\"a\"]\n\n" +
				"[dependency-groups]\ndev = [\"ruff\"]\nTests = [\"attrs\"]\n",
		}, []string{"pip install -e .[test] <- pyproject.toml", "pip install attrs <- pyproject.toml [dependency-groups] Tests"}},
		{"only tooling in the group", map[string]string{
			"pyproject.toml": "[project]\nname = \"p\"\n\n[dependency-groups]\ndev = [\"mypy\", \"ruff\"]\n",
		}, []string{"pip install -e . <- pyproject.toml"}},
		{"no group for tests", map[string]string{
			"pyproject.toml": "[project]\nname = \"p\"\n\n[dependency-groups]\ndocs = [\"sphinx-rtd-theme\"]\n",
		}, []string{"pip install -e . <- pyproject.toml"}},
	}
	for _, tt := range tests {
		r := readProject(writeTree(t, tt.files))
		if diff := cmp.Diff(tt.install, cmds(r.install)); diff != "" {
			t.Errorf("%s: readProject install mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}
