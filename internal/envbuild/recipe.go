package envbuild

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"cwm/internal/env"
)

// Recipe is how to install and test a repository.
type Recipe struct {
	Install []env.Step `json:"install"`
	Test    env.Step   `json:"test"`
}

// detectRecipe finds the recipe of the repository checked out at repo.
// For each of install and test, the first source with an answer wins:
// explicit flags, GitHub workflows, tox.ini or noxfile.py, the project's
// metadata (pyproject.toml, setup.cfg, setup.py, requirements*.txt), a
// Makefile test target (test only), then python -m pytest, then python -m
// unittest discover.
func detectRecipe(repo string, flagInstall []string, flagTest, python string) (Recipe, error) {
	var r Recipe
	installFound := len(flagInstall) > 0
	for _, c := range flagInstall {
		r.Install = append(r.Install, env.Step{Command: c, Provenance: "flag --install"})
	}
	testFound := flagTest != ""
	if testFound {
		r.Test = env.Step{Command: flagTest, Provenance: "flag --test"}
	}
	tox := readTox(repo)
	nox := readNox(repo)

	wfInstall, wfTest, err := workflowCommands(repo, python)
	if err != nil {
		return r, fmt.Errorf("read workflows: %w", err)
	}
	if !installFound {
		// Installing tox or nox themselves is tooling: their own recipe
		// says what they install.
		var kept []env.Step
		for _, s := range wfInstall {
			if !onlyTooling(s.Command) {
				kept = append(kept, s)
			}
		}
		if len(kept) > 0 {
			r.Install, installFound = kept, true
		}
	}
	if !testFound && len(wfTest) > 0 {
		r.Test, testFound = resolveTest(wfTest[0], tox, nox, repo), true
	}
	for _, runner := range []*runnerRecipe{tox, nox} {
		if runner == nil {
			continue
		}
		if !installFound && len(runner.install) > 0 {
			r.Install, installFound = runner.install, true
		}
		if !testFound && runner.test.Command != "" {
			r.Test, testFound = runner.test, true
		}
	}
	proj := readProject(repo)
	if !installFound && len(proj.install) > 0 {
		r.Install, installFound = proj.install, true
	}
	if !testFound && proj.test.Command != "" {
		r.Test, testFound = proj.test, true
	}
	if !testFound {
		if s, ok := makeTest(repo); ok {
			r.Test, testFound = resolveTest(s, tox, nox, repo), true
		}
	}
	if !testFound {
		r.Test = fallbackTest(repo)
	}
	return r, nil
}

// resolveTest follows a test command that delegates to tox, nox or make to
// the command they would run: tox and nox need the network to build their
// own environments, and cwm needs the runner itself to see each test.
func resolveTest(s env.Step, tox, nox *runnerRecipe, repo string) env.Step {
	words := strings.Fields(s.Command)
	i := 0
	if len(words) > 3 && words[0] == "cd" && words[2] == "&&" {
		i = 3 // a working-directory prefix: resolve what follows
	}
	if i >= len(words) {
		return s
	}
	first := filepath.Base(words[i])
	if first == "python" || strings.HasPrefix(first, "python3") {
		if i+2 < len(words) && words[i+1] == "-m" {
			first = words[i+2]
		}
	}
	var via *runnerRecipe
	switch first {
	case "tox":
		via = tox
	case "nox":
		via = nox
	case "make":
		if i+1 < len(words) {
			if m, ok := makeTarget(repo, words[i+1]); ok && m.Command != s.Command {
				return env.Step{Command: m.Command, Provenance: s.Provenance + " -> " + m.Provenance}
			}
		}
	}
	if via != nil && via.test.Command != "" {
		return env.Step{Command: via.test.Command, Provenance: s.Provenance + " -> " + via.test.Provenance}
	}
	return s
}

// tooling are packages that run, build or lint a project rather than being
// what its tests import; installing them offline would only fail.
var tooling = map[string]bool{
	"pip": true, "setuptools": true, "wheel": true, "tox": true, "nox": true, "build": true,
	"twine": true, "virtualenv": true, "pre-commit": true, "tox-gh-actions": true,
	"codecov": true, "coveralls": true, "ruff": true, "flake8": true, "black": true,
	"mypy": true, "isort": true, "pylint": true, "pytest-cov": true, "coverage": true,
	"pytest-xdist": true, "uv": true, "poetry": true, "pdm": true, "hatch": true,
}

// onlyTooling reports whether a pip command installs nothing but tooling.
func onlyTooling(line string) bool {
	words := strings.Fields(line)
	idx := -1
	for i, w := range words {
		if w == "install" {
			idx = i
			break
		}
	}
	if idx < 0 || !strings.Contains(line, "pip") {
		return false
	}
	names := 0
	for i := idx + 1; i < len(words); i++ {
		w := strings.Trim(words[i], `'"`)
		switch {
		case w == "-r" || w == "-c" || w == "-e" || w == "--requirement" || w == "--editable" || strings.HasPrefix(w, "-r"):
			return false
		case strings.HasPrefix(w, "-"):
			continue
		case w == "." || strings.HasPrefix(w, ".[") || strings.HasPrefix(w, "./"):
			return false
		}
		names++
		if !tooling[env.RequirementName(w)] {
			return false
		}
	}
	return names > 0
}

// runnerRecipe is what a tox.ini, noxfile.py or the project metadata says.
type runnerRecipe struct {
	install []env.Step
	test    env.Step
}

// ini is a minimal INI reader for tox.ini and setup.cfg: sections of keys
// whose values may continue on indented lines.
type ini map[string]map[string]string

func readINI(path string) ini {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	out := ini{}
	section, key := "", ""
	for _, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimRight(raw, " \t\r")
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, ";") {
			continue
		}
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			section, key = strings.TrimSpace(t[1:len(t)-1]), ""
			if out[section] == nil {
				out[section] = map[string]string{}
			}
			continue
		}
		if section == "" {
			continue
		}
		if (line[0] == ' ' || line[0] == '\t') && key != "" {
			out[section][key] += "\n" + t
			continue
		}
		k, v, ok := strings.Cut(t, "=")
		if !ok {
			continue
		}
		key = strings.TrimSpace(k)
		out[section][key] = strings.TrimSpace(v)
	}
	return out
}

// toxSubst replaces tox substitutions: {posargs:DEFAULT} by its default,
// directory variables by the repository root.
var toxSubst = regexp.MustCompile(`\{(posargs|toxinidir|envpython|envbindir|envsitepackagesdir|envtmpdir|toxworkdir)(?::([^}]*))?\}`)

func substituteTox(s string) string {
	// tox splits commands into words itself, so spacing carries nothing.
	return strings.Join(strings.Fields(toxSubst.ReplaceAllStringFunc(s, func(m string) string {
		sm := toxSubst.FindStringSubmatch(m)
		switch sm[1] {
		case "posargs":
			return sm[2]
		case "toxinidir":
			return "."
		case "envpython":
			return "python"
		case "envbindir":
			return ""
		}
		return "/tmp"
	})), " ")
}

func readTox(repo string) *runnerRecipe {
	cfg := readINI(filepath.Join(repo, "tox.ini"))
	if cfg == nil {
		return nil
	}
	// tox 4 reads [testenv] and then the named environments; the first
	// environment with commands stands for the rest.
	names := []string{"testenv"}
	var named []string
	for s := range cfg {
		if strings.HasPrefix(s, "testenv:") {
			named = append(named, s)
		}
	}
	sort.Strings(named)
	names = append(names, named...)
	// Named environments inherit what they do not set from [testenv].
	get := func(sec, key string) string {
		if v, ok := cfg[sec][key]; ok {
			return v
		}
		return cfg["testenv"][key]
	}
	var r runnerRecipe
	for i, sec := range names {
		if cfg[sec] == nil || (get(sec, "commands") == "" && i > 0) {
			continue
		}
		prov := "tox.ini [" + sec + "]"
		var s runnerRecipe
		for _, line := range strings.Split(get(sec, "commands"), "\n") {
			line = substituteTox(strings.TrimPrefix(strings.TrimSpace(line), "-"))
			if line != "" && classify(line) == kindTest {
				s.test = env.Step{Command: line, Provenance: prov + " commands"}
				break
			}
		}
		if !isTrue(get(sec, "skip_install")) && !isTrue(cfg["tox"]["skipsdist"]) && hasProjectMetadata(repo) {
			s.install = append(s.install, env.Step{Command: "pip install -e .", Provenance: prov + " (the package)"})
		}
		var deps []string
		for _, d := range strings.Split(get(sec, "deps"), "\n") {
			if d = substituteTox(d); d != "" && !tooling[env.RequirementName(d)] {
				deps = append(deps, quoteArg(d))
			}
		}
		if len(deps) > 0 {
			s.install = append(s.install, env.Step{Command: "pip install " + strings.Join(deps, " "), Provenance: prov + " deps"})
		}
		if i == 0 || s.test.Command != "" {
			r = s
		}
		if r.test.Command != "" {
			break
		}
	}
	if r.test.Command == "" && len(r.install) == 0 {
		return nil
	}
	return &r
}

func isTrue(s string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	return s == "true" || s == "1" || s == "yes"
}

// quoteArg single-quotes a word that bash would otherwise split or
// expand (requirement specifiers contain < > and spaces).
func quoteArg(s string) string {
	if strings.ContainsAny(s, " <>|&;()$`\"'*?[]{}!~") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

var (
	noxCall   = regexp.MustCompile(`session\.(install|run)\(([^)]*)\)`)
	pyLiteral = regexp.MustCompile(`^\s*(?:"([^"]*)"|'([^']*)')\s*$`)
)

// readNox reads session.install and session.run calls whose arguments are
// all string literals (others, like *session.posargs, are dropped).
func readNox(repo string) *runnerRecipe {
	data, err := os.ReadFile(filepath.Join(repo, "noxfile.py"))
	if err != nil {
		return nil
	}
	var r runnerRecipe
	for _, m := range noxCall.FindAllStringSubmatch(string(data), -1) {
		var args []string
		for _, a := range strings.Split(m[2], ",") {
			if lm := pyLiteral.FindStringSubmatch(a); lm != nil {
				args = append(args, quoteArg(lm[1]+lm[2]))
			}
		}
		if len(args) == 0 {
			continue
		}
		line := strings.Join(args, " ")
		switch {
		case m[1] == "install":
			if !onlyTooling("pip install " + line) {
				r.install = append(r.install, env.Step{Command: "pip install " + line, Provenance: "noxfile.py session.install"})
			}
		case r.test.Command == "" && classify(line) == kindTest:
			r.test = env.Step{Command: line, Provenance: "noxfile.py session.run"}
		}
	}
	if r.test.Command == "" && len(r.install) == 0 {
		return nil
	}
	return &r
}
