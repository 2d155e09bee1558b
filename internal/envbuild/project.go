package envbuild

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"cwm/internal/env"
	"cwm/internal/lazyre"
)

// hasProjectMetadata reports whether the repository can be installed as
// a package.
func hasProjectMetadata(repo string) bool {
	for _, f := range []string{"pyproject.toml", "setup.py", "setup.cfg"} {
		if fileExists(filepath.Join(repo, f)) {
			if f == "pyproject.toml" && !pyprojectDescribesPackage(repo) {
				continue
			}
			return true
		}
	}
	return false
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// tomlSections splits a TOML file into its [section] bodies. It is not a
// TOML parser: it is enough to find section names and the keys inside,
// which is all recipe detection needs.
func tomlSections(data string) map[string]string {
	out := map[string]string{}
	name := ""
	var body strings.Builder
	flush := func() { out[name] += body.String(); body.Reset() }
	for _, line := range strings.Split(data, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") && !strings.HasPrefix(t, "[[") && strings.HasSuffix(t, "]") && !strings.Contains(t, "=") {
			flush()
			name = strings.TrimSpace(t[1 : len(t)-1])
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	flush()
	return out
}

func pyprojectDescribesPackage(repo string) bool {
	data, err := os.ReadFile(filepath.Join(repo, "pyproject.toml"))
	if err != nil {
		return false
	}
	secs := tomlSections(string(data))
	_, project := secs["project"]
	_, build := secs["build-system"]
	_, poetry := secs["tool.poetry"]
	return project || build || poetry
}

var (
	tomlKey    = lazyre.New(`(?m)^\s*"?([A-Za-z0-9_.-]+)"?\s*=`)
	setupExtra = lazyre.New(`["'](tests?|testing|dev)["']\s*:`)
)

// testExtras are the names under which projects declare their test
// dependencies, most specific first.
var testExtras = []string{"test", "tests", "testing", "dev"}

// projectExtra returns the optional-dependency group holding the test
// requirements, if the project declares one.
func projectExtra(repo string) string {
	have := map[string]bool{}
	if data, err := os.ReadFile(filepath.Join(repo, "pyproject.toml")); err == nil {
		secs := tomlSections(string(data))
		for _, m := range tomlKey().FindAllStringSubmatch(secs["project.optional-dependencies"], -1) {
			have[m[1]] = true
		}
	}
	if cfg := readINI(filepath.Join(repo, "setup.cfg")); cfg != nil {
		for k := range cfg["options.extras_require"] {
			have[k] = true
		}
	}
	if data, err := os.ReadFile(filepath.Join(repo, "setup.py")); err == nil && strings.Contains(string(data), "extras_require") {
		for _, m := range setupExtra().FindAllStringSubmatch(string(data), -1) {
			have[m[1]] = true
		}
	}
	for _, e := range testExtras {
		if have[e] {
			return e
		}
	}
	return ""
}

// testGroup is the PEP 735 dependency group holding the test
// requirements (named as test extras are, most specific first), its
// requirements quoted for a pip line (tooling left out), and the extras of
// the project itself the group names ("xarray[complete,types]" in
// xarray's dev group): those go on the project's own editable install,
// since a requirement on the project by name would fetch it from the
// index. A project whose CI installs through a tool cwm does not run
// (pixi, conda) and names no test extra keeps its test requirements
// there: without the group, pytest's plugins and the tests' imports are
// missing (xarray: pytest-asyncio, pytz).
func testGroup(repo string) (name string, reqs, self []string) {
	pp := readPyproject(repo)
	have := map[string]string{}
	for k := range pp.DependencyGroups {
		have[env.RequirementName(k)] = k
	}
	for _, e := range testExtras {
		if k, ok := have[e]; ok {
			name = k
			break
		}
	}
	if name == "" {
		return "", nil, nil
	}
	own := env.RequirementName(pp.Project.Name)
	seen := map[string]bool{}
	for _, d := range dependencyGroup(repo, name, 0) {
		n := env.RequirementName(d)
		if own != "" && n == own {
			if i, j := strings.Index(d, "["), strings.Index(d, "]"); i >= 0 && j > i {
				for _, e := range strings.Split(d[i+1:j], ",") {
					if e = strings.TrimSpace(e); e != "" && !containsWord(self, e) {
						self = append(self, e)
					}
				}
			}
			continue
		}
		if n == "" || seen[n] || isTooling(n) {
			continue
		}
		seen[n] = true
		reqs = append(reqs, quoteArg(d))
	}
	return name, reqs, self
}

// requirementFiles lists requirements*.txt-style files, the main one
// first.
func requirementFiles(repo string) []string {
	var out []string
	seen := map[string]bool{}
	for _, pat := range []string{"requirements.txt", "requirements*.txt", "*requirements*.txt", "requirements/*.txt"} {
		m, _ := filepath.Glob(filepath.Join(repo, pat))
		sort.Strings(m)
		for _, f := range m {
			rel, _ := filepath.Rel(repo, f)
			name := strings.ToLower(rel)
			// Documentation and lint requirements are not what tests need.
			if seen[rel] || strings.Contains(name, "doc") || strings.Contains(name, "lint") {
				continue
			}
			seen[rel] = true
			out = append(out, rel)
		}
	}
	return out
}

// readProject derives a recipe from the project's own files: install the
// package (with its test extra) and its requirement files; test with
// pytest when the project configures pytest.
func readProject(repo string) runnerRecipe {
	var r runnerRecipe
	meta := ""
	for _, f := range []string{"pyproject.toml", "setup.cfg", "setup.py"} {
		if fileExists(filepath.Join(repo, f)) && (f != "pyproject.toml" || pyprojectDescribesPackage(repo)) {
			meta = f
			break
		}
	}
	if meta != "" {
		var extras []string
		if e := projectExtra(repo); e != "" {
			extras = append(extras, e)
		}
		group, reqs, self := testGroup(repo)
		for _, e := range self {
			if !containsWord(extras, e) {
				extras = append(extras, e)
			}
		}
		target := "."
		if len(extras) > 0 {
			target = ".[" + strings.Join(extras, ",") + "]"
		}
		r.install = append(r.install, env.Step{Command: "pip install -e " + target, Provenance: meta})
		if len(reqs) > 0 {
			r.install = append(r.install, env.Step{Command: "pip install " + strings.Join(reqs, " "),
				Provenance: "pyproject.toml [dependency-groups] " + group})
		}
	}
	for _, f := range requirementFiles(repo) {
		r.install = append(r.install, env.Step{Command: "pip install -r " + f, Provenance: f})
	}
	switch {
	case hasTOMLSection(repo, "pyproject.toml", "tool.pytest.ini_options"):
		r.test = env.Step{Command: "python -m pytest", Provenance: "pyproject.toml [tool.pytest.ini_options]"}
	case readINI(filepath.Join(repo, "setup.cfg"))["tool:pytest"] != nil:
		r.test = env.Step{Command: "python -m pytest", Provenance: "setup.cfg [tool:pytest]"}
	case fileExists(filepath.Join(repo, "pytest.ini")):
		r.test = env.Step{Command: "python -m pytest", Provenance: "pytest.ini"}
	case readINI(filepath.Join(repo, "tox.ini"))["pytest"] != nil:
		r.test = env.Step{Command: "python -m pytest", Provenance: "tox.ini [pytest]"}
	}
	return r
}

func hasTOMLSection(repo, file, section string) bool {
	data, err := os.ReadFile(filepath.Join(repo, file))
	if err != nil {
		return false
	}
	_, ok := tomlSections(string(data))[section]
	return ok
}

var (
	makeVar  = lazyre.New(`\$[({]([A-Za-z_][A-Za-z0-9_]*)[)}]`)
	makeName = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// makeTarget finds the first recipe line of a Makefile target that runs
// tests, with simple variables (NAME = value) expanded. Without one, the
// target itself ("make test") is the command.
func makeTarget(repo, target string) (env.Step, bool) {
	var file string
	for _, f := range []string{"GNUmakefile", "makefile", "Makefile"} {
		if fileExists(filepath.Join(repo, f)) {
			file = f
			break
		}
	}
	if file == "" {
		return env.Step{}, false
	}
	data, _ := os.ReadFile(filepath.Join(repo, file))
	vars := map[string]string{"PYTHON": "python"}
	lines := strings.Split(string(data), "\n")
	for _, l := range lines {
		if k, v, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(l, "\t") {
			k = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(k), "?:+"))
			if makeName().MatchString(k) {
				vars[k] = strings.TrimSpace(v)
			}
		}
	}
	expand := func(s string) string {
		for i := 0; i < 5 && makeVar().MatchString(s); i++ {
			s = makeVar().ReplaceAllStringFunc(s, func(m string) string {
				return vars[makeVar().FindStringSubmatch(m)[1]]
			})
		}
		return strings.Join(strings.Fields(s), " ")
	}
	prov := file + " target " + target
	for i, l := range lines {
		name, _, ok := strings.Cut(l, ":")
		if !ok || strings.HasPrefix(l, "\t") || !containsWord(strings.Fields(name), target) {
			continue
		}
		for _, r := range lines[i+1:] {
			if !strings.HasPrefix(r, "\t") {
				break
			}
			cmd := expand(strings.TrimLeft(strings.TrimSpace(r), "@-+"))
			// A recipe that runs its tests through uv (seaborn's uv run
			// --no-sync pytest ...): the command uv would run.
			note := ""
			if c, ok := uvCommand(cmd); ok {
				cmd, note = c, uvRunNote
			}
			if classify(cmd) == kindTest && !strings.HasPrefix(cmd, "make ") {
				return env.Step{Command: cmd, Provenance: prov + note}, true
			}
		}
		return env.Step{Command: "make " + target, Provenance: prov}, true
	}
	return env.Step{}, false
}

func containsWord(ws []string, w string) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

func makeTest(repo string) (env.Step, bool) { return makeTarget(repo, "test") }

var (
	importsPytest = lazyre.New(`(?m)^\s*(import pytest|from pytest\b)|@pytest\.`)
	usesUnittest  = lazyre.New(`(?m)^\s*(import unittest|from unittest\b)|unittest\.TestCase|\(TestCase\)`)
	bareTestFunc  = lazyre.New(`(?m)^def test_`)
)

// fallbackTest is python -m pytest, unless every test file is a plain
// unittest module (no pytest import, no module-level test functions), in
// which case it is unittest discovery from the directory holding them.
func fallbackTest(repo string) env.Step {
	var files []string
	filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == ".git" || strings.HasPrefix(d.Name(), ".") && p != repo) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), "test") && strings.HasSuffix(d.Name(), ".py") {
			files = append(files, p)
		}
		return nil
	})
	unittestOnly := len(files) > 0
	dirs := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(data)
		if importsPytest().MatchString(s) || bareTestFunc().MatchString(s) || !usesUnittest().MatchString(s) {
			unittestOnly = false
		}
		rel, _ := filepath.Rel(repo, filepath.Dir(f))
		dirs[rel] = true
	}
	if !unittestOnly {
		return env.Step{Command: "python -m pytest", Provenance: "default (pytest)"}
	}
	// Discovery only descends into packages; a tests/ directory without
	// __init__.py must be the start directory itself.
	if len(dirs) == 1 {
		for d := range dirs {
			if d != "." && !fileExists(filepath.Join(repo, d, "__init__.py")) {
				return env.Step{Command: "python -m unittest discover -s " + d, Provenance: "default (unittest: no pytest in the tests)"}
			}
		}
	}
	return env.Step{Command: "python -m unittest discover", Provenance: "default (unittest: no pytest in the tests)"}
}
