package envbuild

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"cwm/internal/env"
	"cwm/internal/lazyre"
)

// readTox reads the repository's tox configuration (tox.ini, tox.toml,
// pyproject.toml's [tool.tox] or its legacy_tox_ini): the first
// environment with a test command stands for the rest.
func readTox(repo string) *runnerRecipe { return readToxEnv(repo, "") }

// readToxEnv reads the tox environment name (tox -e NAME), or the first
// one with a test command when name is "" or has no section of its own
// (py311 and the like run [testenv]).
func readToxEnv(repo, name string) *runnerRecipe {
	cfg, file := toxConfig(repo)
	if cfg == nil {
		return nil
	}
	// tox 4 reads [testenv] and then the named environments.
	names := []string{"testenv"}
	var named []string
	for s := range cfg {
		if strings.HasPrefix(s, "testenv:") {
			named = append(named, s)
		}
	}
	sort.Strings(named)
	if name != "" && cfg["testenv:"+name] != nil {
		names = []string{"testenv:" + name}
	} else {
		names = append(names, named...)
	}
	// Named environments inherit what they do not set from [testenv].
	get := func(sec, key string) string {
		v, ok := cfg[sec][key]
		if !ok {
			v = cfg["testenv"][key]
		}
		return toxRefs(cfg, v, 0)
	}
	// Unnamed, an environment named for tests comes first, and one that
	// type-checks is passed over.
	if name == "" || cfg["testenv:"+name] == nil {
		var testish, rest []string
		for _, sec := range names[1:] {
			switch env := strings.TrimPrefix(sec, "testenv:"); {
			case typeChecks(env):
			case strings.Contains(env, "test") || strings.Contains(env, "unit"):
				testish = append(testish, sec)
			default:
				rest = append(rest, sec)
			}
		}
		names = append(append(names[:1], testish...), rest...)
	}
	var r runnerRecipe
	for i, sec := range names {
		if cfg[sec] == nil || (get(sec, "commands") == "" && i > 0) {
			continue
		}
		prov := file + " [" + sec + "]"
		var s runnerRecipe
		// The environment's factors decide which conditional lines
		// apply; when none of its lines tests, lines conditioned on a
		// test factor (unit, tests) are taken.
		f := factorsOf(name, sec)
		// Install commands before the test command run after deps, as in
		// tox (black's skip_install environment runs pip install -e .[d]
		// first).
		var pre []env.Step
		for _, loose := range []bool{false, true} {
			pre = nil
			// A trailing backslash continues a command on the next line.
		lines:
			for _, line := range strings.Split(strings.ReplaceAll(get(sec, "commands"), "\\\n", " "), "\n") {
				line, ok := f.apply(line, loose)
				// An inline comment ends the command (conan's "pytest -m
				// ... [] # substitute with tox' positional arguments"),
				// and [] is tox 3's old spelling of {posargs}.
				line = oldPosargs().ReplaceAllString(inlineComment().ReplaceAllString(line, ""), "$1$2")
				line = literalGlobs(substituteTox(strings.TrimPrefix(line, "-")))
				if !ok || line == "" {
					continue
				}
				switch classify(line) {
				case kindTest:
					s.test = env.Step{Command: line, Provenance: prov + " commands"}
					f.loose = loose
					break lines
				case kindInstall:
					pre = append(pre, env.Step{Command: line, Provenance: prov + " commands"})
				}
			}
			if s.test.Command != "" {
				break
			}
		}
		// tox installs an environment's deps, then the package: a package
		// built in the venv by the pip of its day (lxml 2022's setup.py)
		// finds Cython and the like that deps name.
		var pkg *env.Step
		skip := isTrue(get(sec, "skip_install")) || isTrue(cfg["tox"]["skipsdist"]) || strings.TrimSpace(get(sec, "package")) == "skip"
		if !skip && hasProjectMetadata(repo) {
			target := "."
			var ex []string
			// [testenv] standing for environments of no named factor
			// takes a test factor's extras too (astropy's "test: test",
			// whose CI names its environments in a shared workflow).
			loose := f.loose || len(f.set) == 0
			for _, line := range strings.Split(get(sec, "extras"), "\n") {
				if line, ok := f.apply(line, loose); ok {
					ex = append(ex, strings.Fields(strings.ReplaceAll(line, ",", " "))...)
				}
			}
			if len(ex) > 0 {
				target = ".[" + strings.Join(ex, ",") + "]"
			}
			pkg = &env.Step{Command: "pip install -e " + quoteArg(target), Provenance: prov + " (the package)"}
		}
		var deps []string
		for _, d := range strings.Split(get(sec, "deps"), "\n") {
			d, ok := f.apply(d, f.loose)
			// tox ends a line's value at an inline comment (scrapy's
			// "bpython  # optional for shell wrapper tests").
			d = inlineComment().ReplaceAllString(d, "")
			d = substituteTox(d)
			switch {
			case !ok || d == "" || strings.Contains(d, "://"):
			case strings.HasPrefix(d, "-"):
				// An option line (-r file, -c file, -e path): its words
				// are pip's, one by one; quoted whole, "-r file" is a
				// file named " file".
				for _, w := range strings.Fields(d) {
					deps = append(deps, quoteArg(w))
				}
			case !isTooling(env.RequirementName(d)) || envTooling[env.RequirementName(d)]:
				deps = append(deps, quoteArg(d))
			}
		}
		// Groups are named one or more a line, a line with its factor
		// conditions as deps' lines have them; each group counts once.
		// A line for some Python versions (py39: test) applies to an
		// environment that names none: cwm runs the one Python it has.
		seen := map[string]bool{}
		for _, line := range strings.Split(get(sec, "dependency_groups"), "\n") {
			forPython := f.forPythonOnly(line)
			line, ok := f.apply(line, f.loose)
			ok = ok || forPython
			for _, g := range strings.Fields(strings.ReplaceAll(line, ",", " ")) {
				if !ok || seen[g] {
					continue
				}
				seen[g] = true
				for _, d := range dependencyGroup(repo, g, 0) {
					if !isTooling(env.RequirementName(d)) {
						deps = append(deps, quoteArg(d))
					}
				}
			}
		}
		if len(deps) > 0 {
			s.install = append(s.install, env.Step{Command: "pip install " + strings.Join(deps, " "), Provenance: prov + " deps"})
		}
		if pkg != nil {
			s.install = append(s.install, *pkg)
		}
		if s.test.Command != "" {
			s.install = append(s.install, pre...)
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

// toxEnvArg is the first environment a tox command line names with -e
// (or -eNAME, -e=NAME, --env NAME), "" when none.
func toxEnvArg(words []string) string {
	for i, w := range words {
		var v string
		switch {
		case (w == "-e" || w == "--env") && i+1 < len(words):
			v = words[i+1]
		case strings.HasPrefix(w, "-e="), strings.HasPrefix(w, "--env="):
			_, v, _ = strings.Cut(w, "=")
		case strings.HasPrefix(w, "-e") && len(w) > 2 && !strings.HasPrefix(w, "--"):
			v = w[2:]
		default:
			continue
		}
		v, _, _ = strings.Cut(strings.Trim(v, `'"`), ",")
		return v
	}
	return ""
}

// toxConfig reads tox's configuration as INI sections (TOML forms are
// converted: env_run_base is [testenv], env.NAME is [testenv:NAME],
// commands one per line) and names the file it came from.
// toxRef is tox's reference to another section's value, {[section]key}
// (scrapy's deps = {[testenv:extra-deps]deps}, SQLAlchemy's
// {[testenv:githubbase]deps}).
var toxRef = lazyre.New(`\{\[([^\]\s]+)\]([\w-]+)\}`)

// toxRefs is v with its {[section]key} references replaced by their
// values, themselves expanded (to a depth that stops a cycle); a reference
// to nothing is nothing, as tox makes it.
func toxRefs(cfg ini, v string, depth int) string {
	if depth > 8 || !strings.Contains(v, "{[") {
		return v
	}
	return toxRef().ReplaceAllStringFunc(v, func(m string) string {
		sm := toxRef().FindStringSubmatch(m)
		return toxRefs(cfg, cfg[sm[1]][sm[2]], depth+1)
	})
}

func toxConfig(repo string) (ini, string) {
	if cfg := readINI(filepath.Join(repo, "tox.ini")); cfg != nil {
		return cfg, "tox.ini"
	}
	if data, err := os.ReadFile(filepath.Join(repo, "tox.toml")); err == nil {
		var t map[string]any
		if toml.Unmarshal(data, &t) == nil {
			return toxFromTOML(t), "tox.toml"
		}
	}
	t := readPyproject(repo).Tool.Tox
	if t == nil {
		return nil, ""
	}
	if legacy, ok := t["legacy_tox_ini"].(string); ok {
		f, err := os.CreateTemp("", "cwm-tox-*.ini")
		if err != nil {
			return nil, ""
		}
		defer os.Remove(f.Name())
		f.WriteString(legacy)
		f.Close()
		return readINI(f.Name()), "pyproject.toml legacy_tox_ini"
	}
	return toxFromTOML(t), "pyproject.toml [tool.tox]"
}

func toxFromTOML(t map[string]any) ini {
	out := ini{"tox": {}}
	if _, ok := t["env_list"].([]any); ok {
		out["tox"]["env_list"] = strings.Join(tomlList(t["env_list"]), ",")
	}
	if base, ok := t["env_run_base"].(map[string]any); ok {
		out["testenv"] = toxEnvFromTOML(base)
	}
	if envs, ok := t["env"].(map[string]any); ok {
		for name, v := range envs {
			if m, ok := v.(map[string]any); ok {
				out["testenv:"+name] = toxEnvFromTOML(m)
			}
		}
	}
	if out["testenv"] == nil {
		out["testenv"] = map[string]string{}
	}
	return out
}

// toxEnvFromTOML converts one TOML environment table: commands are lists
// of words, where {replace = "posargs", default = [...]} stands for its
// default and other replacements for nothing.
func toxEnvFromTOML(m map[string]any) map[string]string {
	sec := map[string]string{}
	for k, v := range m {
		switch k {
		case "commands":
			var lines []string
			cmds, _ := v.([]any)
			for _, c := range cmds {
				words, _ := c.([]any)
				var ws []string
				for _, w := range words {
					switch x := w.(type) {
					case string:
						ws = append(ws, quoteArg(substituteTox(x)))
					case map[string]any:
						if x["replace"] == "posargs" {
							if d, ok := x["default"].([]any); ok {
								for _, dw := range d {
									ws = append(ws, quoteArg(fmt.Sprint(dw)))
								}
							}
						}
					}
				}
				lines = append(lines, strings.Join(ws, " "))
			}
			sec[k] = strings.Join(lines, "\n")
		case "deps", "dependency_groups", "extras":
			sec[k] = strings.Join(tomlList(v), "\n")
		case "skip_install":
			sec[k] = fmt.Sprint(v)
		case "package":
			sec[k] = fmt.Sprint(v)
		}
	}
	return sec
}

// toxFactors is a factor-conditional prefix of a tox setting's line
// ("unit: pytest", "py311,!lint: dep", astropy's "image, devpytest:
// scipy", sqlfluff's "dbt{170,180}: ...").
var toxFactors = lazyre.New(`^([!\w.{}-]+(?:\s*,\s*[!\w.{}-]+)*):\s+`)

// inlineComment is a comment after a value on a tox line: a # after
// whitespace (a URL's #egg= fragment has none before it).
var inlineComment = lazyre.New(`\s+#.*$`)

// oldPosargs is tox 3's [] for the positional arguments, a word of its own.
var oldPosargs = lazyre.New(`(^|\s)\[\](\s|$)`)

// factors are the factors of the tox environment cwm stands in for
// (py311-unit: py311 and unit).
type factors struct {
	set   map[string]bool
	loose bool // the commands were taken from test-factor lines
}

func factorsOf(name, sec string) *factors {
	if name == "" {
		name = strings.TrimPrefix(strings.TrimPrefix(sec, "testenv"), ":")
	}
	f := &factors{set: map[string]bool{}}
	for _, p := range strings.Split(name, "-") {
		if p != "" {
			f.set[p] = true
		}
	}
	return f
}

// apply takes a factor condition off a line and says whether the line
// applies: one of its comma-separated alternatives has all its factors
// (none of its !factors) in the environment's. Loose, an alternative
// naming a test factor (unit, test, tests, pytest) applies too.
func (f *factors) apply(line string, loose bool) (string, bool) {
	line = strings.TrimSpace(line)
	m := toxFactors().FindStringSubmatch(line)
	if m == nil {
		return line, true
	}
	rest := strings.TrimSpace(line[len(m[0]):])
	// Alternatives as an envlist's names: astropy's "image, devpytest",
	// sqlfluff's generative "dbt{170,180}".
	for _, alt := range expandBraces(m[1]) {
		ok, testish := true, false
		for _, p := range strings.Split(alt, "-") {
			neg := strings.HasPrefix(p, "!")
			p = strings.TrimPrefix(p, "!")
			if f.set[p] == neg {
				ok = false
			}
			if !neg && (p == "unit" || strings.HasPrefix(p, "test") || p == "pytest") {
				testish = true
			}
		}
		if ok || loose && testish {
			return rest, true
		}
	}
	return rest, false
}

// pythonFactor is a tox factor naming a Python version (py3, py311,
// py3.11, pypy3).
var pythonFactor = lazyre.New(`^(py|pypy)[0-9.]*$`)

// forPythonOnly reports whether line's condition names Python versions
// alone while the environment's factors name none.
func (f *factors) forPythonOnly(line string) bool {
	for p := range f.set {
		if pythonFactor().MatchString(p) {
			return false
		}
	}
	m := toxFactors().FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return false
	}
	for _, p := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ',' || r == '-' }) {
		if !pythonFactor().MatchString(p) {
			return false
		}
	}
	return true
}

// literalGlobs quotes the words of a tox command that bash would expand:
// tox runs commands without a shell, so -p *_test.py is the pattern itself.
func literalGlobs(line string) string {
	words := strings.Fields(line)
	for i, w := range words {
		if strings.ContainsAny(w, "*?[") && !strings.ContainsAny(w[:1], `'"`) {
			words[i] = quoteArg(w)
		}
	}
	return strings.Join(words, " ")
}

// envTooling is tooling a tox environment's deps name that its tests may
// use: lxml's "make test" runs setup.py build_ext (its deps name
// "setuptools;python_version >= '3.12'", whose venvs have none).
var envTooling = map[string]bool{"setuptools": true, "wheel": true}
