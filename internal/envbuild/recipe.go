package envbuild

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"cwm/internal/env"
	"cwm/internal/lazyre"
	"cwm/internal/testrun"
)

// The provenance of steps given as flags (or as Options.Install and Test).
const (
	flagInstallProv = "flag --install"
	flagTestProv    = "flag --test"
)

// Recipe is how to install and test a repository.
type Recipe struct {
	Install []env.Step `json:"install"`
	Test    env.Step   `json:"test"`
	// Alternatives are the test commands of the later sources, in
	// detection order, for when Test collects no test: a command that
	// collects none is not the test command (a mypy tox factor, a lint
	// job). None when the test command was given.
	Alternatives []env.Step `json:"-"`
}

// detectRecipe finds the recipe of the repository checked out at repo.
// For each of install and test, the first source with an answer wins:
// explicit flags, GitHub workflows, tox.ini or noxfile.py, the project's
// metadata (pyproject.toml, setup.cfg, setup.py, requirements*.txt), a
// Makefile test target (test only), then python -m pytest, then python -m
// unittest discover.
//
// A source whose command needs a program the sandbox does not have (have
// reports false; nil means every program is there) fails, and the next
// source is taken: the chosen step's provenance says which was passed
// over and why.
func detectRecipe(repo string, flagInstall []string, flagTest, python string, have func(string) bool) (Recipe, error) {
	var r Recipe
	installFound := len(flagInstall) > 0
	for _, c := range flagInstall {
		r.Install = append(r.Install, env.Step{Command: c, Provenance: flagInstallProv})
	}
	testFound := flagTest != ""
	if testFound {
		r.Test = env.Step{Command: flagTest, Provenance: flagTestProv}
	}
	tox := readTox(repo)
	nox := readNox(repo)
	var skippedInstall, skippedTest, skippedAlt []string
	// usable reports whether every program steps need is there, noting
	// the first that is not.
	usable := func(steps []env.Step, skipped *[]string) bool {
		for _, st := range steps {
			if prog := missingProgram(st.Command, have); prog != "" {
				*skipped = append(*skipped, fmt.Sprintf("%s: %s not found", st.Provenance, prog))
				return false
			}
		}
		return true
	}

	wfInstall, wfTest, err := workflowCommands(repo, python)
	if err != nil {
		return r, fmt.Errorf("read workflows: %w", err)
	}
	if !installFound {
		// Installing tox or nox themselves is tooling: their own recipe
		// says what they install.
		var kept []env.Step
		imports := pytestImports(repo)
		for _, s := range wfInstall {
			if !onlyTooling(s.Command, imports) {
				kept = append(kept, s)
			}
		}
		if len(kept) > 0 && usable(kept, &skippedInstall) {
			r.Install, installFound = kept, true
		}
	}
	// alternative keeps a later source's test command as a candidate
	// for when the chosen one collects no test.
	alternative := func(s env.Step) {
		if flagTest != "" || s.Command == "" || s.Command == r.Test.Command || hasStep(r.Alternatives, s.Command) || !usable([]env.Step{s}, &skippedAlt) {
			return
		}
		r.Alternatives = append(r.Alternatives, s)
	}
	for _, t := range wfTest {
		s, viaInstall := resolveTestVia(t, tox, nox, repo)
		if testFound {
			alternative(s)
			continue
		}
		if !usable([]env.Step{s}, &skippedTest) {
			continue
		}
		r.Test, testFound = s, true
		// The tox environment or nox session the workflow runs installs
		// what its tests need: its steps join the workflow's (or are the
		// install when the workflow has none).
		if len(flagInstall) == 0 && len(viaInstall) > 0 && usable(viaInstall, &skippedInstall) {
			for _, v := range viaInstall {
				if !hasStep(r.Install, v.Command) {
					r.Install = append(r.Install, v)
				}
			}
			installFound = true
		}
	}
	for _, runner := range []*runnerRecipe{tox, nox} {
		if runner == nil {
			continue
		}
		if !installFound && len(runner.install) > 0 && usable(runner.install, &skippedInstall) {
			r.Install, installFound = runner.install, true
		}
		if !testFound && runner.test.Command != "" && usable([]env.Step{runner.test}, &skippedTest) {
			r.Test, testFound = runner.test, true
		} else if testFound {
			alternative(runner.test)
		}
	}
	proj := readProject(repo)
	if !installFound && len(proj.install) > 0 {
		r.Install, installFound = proj.install, true
	}
	if !testFound && proj.test.Command != "" {
		r.Test, testFound = proj.test, true
	} else if testFound {
		alternative(proj.test)
	}
	if s, ok := makeTest(repo); ok {
		s = resolveTest(s, tox, nox, repo)
		if !testFound && usable([]env.Step{s}, &skippedTest) {
			r.Test, testFound = s, true
		} else if testFound {
			alternative(s)
		}
	}
	if !testFound {
		r.Test = fallbackTest(repo)
	} else {
		alternative(fallbackTest(repo))
	}
	if len(skippedInstall) > 0 && len(r.Install) > 0 {
		r.Install[0].Provenance += " (passed over: " + strings.Join(skippedInstall, "; ") + ")"
	}
	if len(skippedTest) > 0 {
		r.Test.Provenance += " (passed over: " + strings.Join(skippedTest, "; ") + ")"
	}
	return r, nil
}

func hasStep(steps []env.Step, command string) bool {
	for _, s := range steps {
		if s.Command == command {
			return true
		}
	}
	return false
}

// shellBuiltins need no program.
var shellBuiltins = map[string]bool{
	"cd": true, "export": true, "echo": true, "set": true, "source": true, ".": true, "true": true,
	"false": true, "test": true, "[": true, "exit": true, "unset": true, "printf": true, "exec": true,
	"env": true, "time": true, "sudo": true, "command": true,
}

// missingProgram is the first program a command line runs that have says
// is absent, or "". Commands cwm runs through its own test runner (pytest,
// unittest) and pip (which install steps go through) always count as
// present; so does anything in a line bash would need to interpret.
func missingProgram(line string, have func(string) bool) string {
	if have == nil {
		return ""
	}
	if tc, err := testrun.Parse(line); err == nil && tc.Framework != testrun.Shell {
		return ""
	}
	cmds, complex, err := testrun.Words(line)
	if err != nil || complex {
		return ""
	}
	for _, words := range cmds {
		for len(words) > 0 && (strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") || shellBuiltins[words[0]]) {
			if words[0] == "sudo" {
				words = withoutSudo(words)
				continue
			}
			if words[0] == "cd" {
				words = nil // cd DIR: the directory, not a program
				break
			}
			words = words[1:]
		}
		if len(words) == 0 {
			continue
		}
		prog := words[0]
		if isPythonName(path.Base(prog)) {
			if len(words) > 2 && words[1] == "-m" && (words[2] == "tox" || words[2] == "nox") {
				prog = words[2]
			} else {
				continue
			}
		}
		switch path.Base(prog) {
		case "pip", "pip3", "apt-get", "apt", "sudo":
			continue
		case "uv":
			if uvInstallWords(words) {
				continue // uv from the index, or the install translated to pip
			}
		}
		if !have(prog) {
			return prog
		}
	}
	return ""
}

// resolveTest follows a test command that delegates to tox, nox or make to
// the command they would run: tox and nox need the network to build their
// own environments, and cwm needs the runner itself to see each test.
func resolveTest(s env.Step, tox, nox *runnerRecipe, repo string) env.Step {
	st, _ := resolveTestVia(s, tox, nox, repo)
	return st
}

// resolveTestVia is resolveTest that also returns the install steps of
// the tox environment or nox session it followed (nil for none).
func resolveTestVia(s env.Step, tox, nox *runnerRecipe, repo string) (env.Step, []env.Step) {
	words := strings.Fields(s.Command)
	i := 0
	if len(words) > 3 && words[0] == "cd" && words[2] == "&&" {
		i = 3 // a working-directory prefix: resolve what follows
	}
	if i >= len(words) {
		return s, nil
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
		if name := toxEnvArg(words[i:]); name != "" {
			if r := readToxEnv(repo, name); r != nil {
				via = r
			}
		}
	case "nox":
		via = nox
	case "make":
		if i+1 < len(words) {
			if m, ok := makeTarget(repo, words[i+1]); ok && m.Command != s.Command {
				return env.Step{Command: m.Command, Provenance: s.Provenance + " -> " + m.Provenance}, nil
			}
		}
	}
	if via != nil && via.test.Command != "" {
		return env.Step{Command: via.test.Command, Provenance: s.Provenance + " -> " + via.test.Provenance}, via.install
	}
	return s, nil
}

// tooling are packages that run, build or lint a project rather than being
// what its tests import; installing them offline would only fail.
var tooling = map[string]bool{
	"pip": true, "setuptools": true, "wheel": true, "tox": true, "nox": true, "build": true,
	"twine": true, "virtualenv": true, "pre-commit": true, "tox-gh-actions": true,
	"codecov": true, "coveralls": true, "ruff": true, "flake8": true, "black": true,
	"mypy": true, "isort": true, "pylint": true, "pytest-cov": true, "coverage": true,
	"pytest-xdist": true, "uv": true, "poetry": true, "pdm": true, "hatch": true,
	"tox-uv": true, "tox-gh": true, "nox-uv": true, "pre-commit-uv": true, "pyright": true,
	"prek": true, "pytest-codspeed": true, "codespell": true, "pytype": true, "pyre-check": true,
	"cibuildwheel": true, "mypy-extensions": false,
}

// toolingPrefix are name prefixes of tooling: tox and nox plugins
// (tox-uv-bare), Pyodide's build tools, type stubs (types-requests).
var toolingPrefix = []string{"tox-", "nox-", "pyodide-", "types-"}

// isTooling reports whether the normalised distribution name is tooling.
func isTooling(name string) bool {
	if t, ok := tooling[name]; ok {
		return t
	}
	for _, p := range toolingPrefix {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return strings.HasSuffix(name, "-stubs")
}

// onlyTooling reports whether a pip command installs nothing but tooling,
// leaving out tooling that provides one of the modules the repository's
// pytest configuration imports (pytestImports).
func onlyTooling(line string, imports map[string]bool) bool {
	words := strings.Fields(line)
	if cmds, complex, err := testrun.Words(line); err == nil && !complex && len(cmds) == 1 {
		words = cmds[0] // quoted requirements with markers are one word
	}
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
		if n := env.RequirementName(w); !isTooling(n) || importedTooling(n, imports) {
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
// A default holds no brace: one that holds a substitution of its own
// (sqlfluff's {posargs: "{toxinidir}/test"}) is replaced after it.
var toxSubst = lazyre.New(`\{(posargs|toxinidir|tox_root|envpython|env_python|envbindir|env_bin_dir|envsitepackagesdir|env_site_packages_dir|envtmpdir|env_tmp_dir|envdir|env_dir|toxworkdir|work_dir|temp_dir|envname|env_name)(?::([^{}]*))?\}`)

// toxEnvVar is tox's {env:NAME:DEFAULT} (or {env:NAME}, empty).
var toxEnvVar = lazyre.New(`\{env:[A-Za-z_][A-Za-z0-9_]*:?([^{}]*)\}`)

func substituteTox(s string) string {
	// tox splits commands into words itself, so spacing carries nothing.
	s = strings.ReplaceAll(s, "{/}", "/")
	for range 4 { // innermost first: a default may hold a substitution
		was := s
		s = toxEnvVar().ReplaceAllString(s, "$1") // {env:NAME:DEFAULT}: the default
		s = toxSubst().ReplaceAllStringFunc(s, toxValue)
		if s == was {
			break
		}
	}
	return strings.Join(strings.Fields(s), " ")
}

// toxValue is the value cwm gives a tox substitution (toxSubst's match m).
func toxValue(m string) string {
	sm := toxSubst().FindStringSubmatch(m)
	switch sm[1] {
	case "posargs":
		return sm[2]
	case "toxinidir", "tox_root":
		return "."
	case "envpython", "env_python":
		return "python"
	case "envbindir", "env_bin_dir":
		return env.VenvRoot + "/bin"
	case "envdir", "env_dir":
		return env.VenvRoot
	case "envsitepackagesdir", "env_site_packages_dir":
		// Where tox installed the package: here its sources, in
		// the repository (installed editable or on the path).
		return "."
	case "envname", "env_name":
		return "cwm"
	case "envtmpdir", "env_tmp_dir":
		// A directory of the environment's own, as tox's is: a test
		// command may clear it (pytest --basetemp).
		return "/tmp/cwm-tox-env-tmp"
	}
	return "/tmp"
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
	noxCall   = lazyre.New(`session\.(install|run)\(`)
	pyLiteral = lazyre.New(`^\s*(?:"([^"]*)"|'([^']*)')\s*$`)
	// noxGroups is nox's dependency-group helper, *nox.project.
	// dependency_groups(PYPROJECT, "test", ...): the groups' requirements.
	noxGroups = lazyre.New(`(?s)^\s*\*\s*nox\.project\.dependency_groups\((.*)\)\s*$`)
)

// callArgs splits the arguments of a call whose text starts just after
// its opening parenthesis: at top-level commas, up to the parenthesis that
// closes it, nested calls and string literals kept whole.
func callArgs(s string) []string {
	var args []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			if depth == 0 {
				return append(args, s[start:i])
			}
			depth--
		case c == ',' && depth == 0:
			args = append(args, s[start:i])
			start = i + 1
		}
	}
	return args
}

// readNox reads session.install and session.run calls: their string
// literal arguments, and the dependency groups nox.project.
// dependency_groups names (others, like *session.posargs, are dropped).
func readNox(repo string) *runnerRecipe {
	data, err := os.ReadFile(filepath.Join(repo, "noxfile.py"))
	if err != nil {
		return nil
	}
	text := string(data)
	var r runnerRecipe
	imports := pytestImports(repo)
	for _, loc := range noxCall().FindAllStringSubmatchIndex(text, -1) {
		kind := text[loc[2]:loc[3]]
		var args []string
		for _, a := range callArgs(text[loc[1]:]) {
			if lm := pyLiteral().FindStringSubmatch(a); lm != nil {
				args = append(args, quoteArg(lm[1]+lm[2]))
				continue
			}
			if gm := noxGroups().FindStringSubmatch(a); gm != nil && kind == "install" {
				for _, g := range callArgs(gm[1] + ")")[1:] {
					if lm := pyLiteral().FindStringSubmatch(g); lm != nil {
						for _, d := range dependencyGroup(repo, lm[1]+lm[2], 0) {
							args = append(args, quoteArg(d))
						}
					}
				}
			}
		}
		if len(args) == 0 {
			continue
		}
		line := strings.Join(args, " ")
		switch {
		case kind == "install":
			if !onlyTooling("pip install "+line, imports) {
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
