package envbuild

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"cwm/internal/env"
)

// uvValueOptions are the options of uv run, uvx and uv sync that take a
// value as the next word.
var uvValueOptions = map[string]bool{
	"--with": true, "-w": true, "--with-editable": true, "--with-requirements": true,
	"--extra": true, "--group": true, "--only-group": true, "--no-group": true,
	"--python": true, "-p": true, "--directory": true, "--project": true, "--package": true,
	"--env-file": true, "--index": true, "--index-url": true, "--default-index": true,
	"--extra-index-url": true, "--from": true, "--config-file": true, "--cache-dir": true,
	"--prerelease": true, "--resolution": true, "--refresh-package": true, "--reinstall-package": true,
}

// unwrapLine turns a CI command that goes through uv (or pipx) into what
// cwm can run offline with the environment's own Python and pip:
//
//	uv run [OPTS] CMD...          -> pip install -e .[EXTRAS] GROUP-DEPS WITH...; CMD...
//	uvx|uv tool run|pipx run [OPTS] CMD...  -> CMD...
//	uv pip install|sync ARGS      -> pip install ARGS
//	uv sync [--extra E] [--group G] -> pip install -e .[E] GROUP-DEPS
//	poetry|pdm|pipenv run CMD...  -> CMD...
//	poetry|pdm install|sync [--with G] [-E E] -> pip install -e .[E] GROUP-DEPS
//
// uv run installs the project (and the dev dependency group) before it
// runs the command, so its unwrapping is an install line and the command.
// Anything else comes back unchanged.
func unwrapLine(line, repo string) []string {
	prefix := ""
	rest := line
	if strings.HasPrefix(rest, "cd ") {
		if i := strings.Index(rest, " && "); i > 0 {
			prefix, rest = rest[:i+4], rest[i+4:]
		}
	}
	words := strings.Fields(rest)
	if len(words) == 0 {
		return []string{line}
	}
	if len(words) > 2 && isPythonName(filepath.Base(words[0])) && words[1] == "-m" && (words[2] == "uv" || words[2] == "pipx") {
		words = words[2:]
	}
	join := func(ws []string) string { return prefix + strings.Join(ws, " ") }
	switch {
	case words[0] == "uvx" || len(words) > 2 && (words[0] == "uv" || words[0] == "pipx") && (words[1] == "tool" && words[2] == "run" || words[1] == "run" && words[0] == "pipx"):
		skip := 1
		if words[0] != "uvx" {
			skip = 2
			if words[1] == "tool" {
				skip = 3
			}
		}
		_, cmd := uvOptions(words[skip:])
		if len(cmd) == 0 {
			return []string{line}
		}
		return []string{join(cmd)}
	case len(words) > 2 && (words[0] == "poetry" || words[0] == "pdm" || words[0] == "pipenv") && words[1] == "run":
		// The project's own environment manager runs CMD in the project's
		// environment: here, the environment is /venv.
		_, cmd := uvOptions(words[2:])
		if len(cmd) == 0 {
			return []string{line}
		}
		return []string{join(cmd)}
	case len(words) > 1 && (words[0] == "poetry" || words[0] == "pdm") && (words[1] == "install" || words[1] == "sync"):
		o := uvOpts{}
		for i := 2; i < len(words); i++ {
			name, val, hasVal := strings.Cut(words[i], "=")
			if (name == "--with" || name == "-E" || name == "--extras" || name == "-G" || name == "--group") && !hasVal && i+1 < len(words) {
				i++
				val = words[i]
			}
			switch name {
			case "--with", "-G", "--group":
				o.groups = append(o.groups, strings.Split(val, ",")...)
			case "-E", "--extras":
				o.extras = append(o.extras, strings.Fields(strings.ReplaceAll(val, ",", " "))...)
			case "--all-extras":
				o.allExtras = true
			case "--no-root", "--no-self":
				o.noProject = true
			case "--only", "--without", "--no-dev", "--prod", "--production":
				o.noDev = true
			}
		}
		if inst := o.install(repo, false); inst != "" {
			return []string{prefix + inst}
		}
		return nil
	case len(words) > 1 && words[0] == "uv" && words[1] == "run":
		o, cmd := uvOptions(words[2:])
		if len(cmd) == 0 {
			return []string{line}
		}
		out := []string{}
		if inst := o.install(repo, true); inst != "" {
			out = append(out, prefix+inst)
		}
		return append(out, join(cmd))
	case len(words) > 2 && words[0] == "uv" && words[1] == "pip" && (words[2] == "install" || words[2] == "sync"):
		args := []string{"pip", "install"}
		if words[2] == "sync" {
			args = append(args, "-r")
		}
		for i := 3; i < len(words); i++ {
			switch words[i] {
			case "--system", "--break-system-packages", "--strict":
				continue
			case "--python", "-p":
				i++
				continue
			}
			args = append(args, words[i])
		}
		return []string{join(args)}
	case len(words) > 1 && words[0] == "uv" && words[1] == "sync":
		o, _ := uvOptions(words[2:])
		if inst := o.install(repo, false); inst != "" {
			return []string{prefix + inst}
		}
		return nil
	}
	return []string{line}
}

// uvOpts is what uv's options say about the installation.
type uvOpts struct {
	extras, groups, with []string
	allExtras, noDev     bool
	noProject            bool
}

// uvOptions splits uv's options from the command that follows them.
func uvOptions(words []string) (uvOpts, []string) {
	var o uvOpts
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "-") {
			return o, words[i:]
		}
		name, val, hasVal := strings.Cut(w, "=")
		if uvValueOptions[name] && !hasVal {
			if i+1 < len(words) {
				i++
				val = words[i]
			}
		}
		switch name {
		case "--extra":
			o.extras = append(o.extras, val)
		case "--group", "--only-group":
			o.groups = append(o.groups, val)
		case "--with", "-w":
			o.with = append(o.with, strings.Split(val, ",")...)
		case "--all-extras":
			o.allExtras = true
		case "--no-dev", "--no-default-groups":
			o.noDev = true
		case "--no-project", "--isolated":
			o.noProject = true
		}
	}
	return o, nil
}

// install is the pip command that does what uv would install before
// running: the project in editable mode with its extras, the dependency
// groups (dev by default), and --with requirements; "" when there is
// nothing. withProject is false for uv sync of a repository that is not a
// package.
func (o uvOpts) install(repo string, run bool) string {
	var words []string
	if !o.noProject && hasProjectMetadata(repo) {
		extras := o.extras
		if o.allExtras {
			extras = projectExtras(repo)
		}
		target := "."
		if len(extras) > 0 {
			target = ".[" + strings.Join(extras, ",") + "]"
		}
		words = append(words, "-e", quoteArg(target))
	}
	groups := o.groups
	if !o.noDev {
		groups = append([]string{"dev"}, groups...)
	}
	seen := map[string]bool{}
	for _, g := range groups {
		for _, r := range dependencyGroup(repo, g, 0) {
			if n := env.RequirementName(r); !seen[n] && !isTooling(n) {
				seen[n] = true
				words = append(words, quoteArg(r))
			}
		}
	}
	for _, w := range o.with {
		if n := env.RequirementName(w); w != "" && !seen[n] && !isTooling(n) {
			seen[n] = true
			words = append(words, quoteArg(w))
		}
	}
	if len(words) == 0 {
		return ""
	}
	return "pip install " + strings.Join(words, " ")
}

// buildSystem is pyproject.toml's [build-system].
type buildSystem struct {
	Requires []string `toml:"requires"`
	Backend  string   `toml:"build-backend"`
}

// pyproject is the part of pyproject.toml recipe detection reads.
type pyproject struct {
	BuildSystem buildSystem `toml:"build-system"`
	Project     struct {
		Name                 string              `toml:"name"`
		Dependencies         []string            `toml:"dependencies"`
		OptionalDependencies map[string][]string `toml:"optional-dependencies"`
	} `toml:"project"`
	DependencyGroups map[string][]any `toml:"dependency-groups"`
	Tool             struct {
		Tox    map[string]any `toml:"tox"`
		Poetry struct {
			Group map[string]struct {
				Dependencies map[string]any `toml:"dependencies"`
			} `toml:"group"`
			DevDependencies map[string]any `toml:"dev-dependencies"`
		} `toml:"poetry"`
		Pdm struct {
			DevDependencies map[string][]string `toml:"dev-dependencies"`
			Version         struct {
				WriteTo string `toml:"write_to"`
			} `toml:"version"`
		} `toml:"pdm"`
		Hatch struct {
			Build struct {
				Hooks struct {
					Vcs struct {
						VersionFile string `toml:"version-file"`
					} `toml:"vcs"`
				} `toml:"hooks"`
			} `toml:"build"`
		} `toml:"hatch"`
		// UV is uv's workspace and sources (uvworkspace.go); a source is
		// a table or, with markers, a list of tables.
		UV struct {
			Sources   map[string]any `toml:"sources"`
			Workspace struct {
				Members []string `toml:"members"`
			} `toml:"workspace"`
		} `toml:"uv"`
		// Pytest is [tool.pytest] (pytest 9's native table) with
		// [tool.pytest.ini_options] inside it (pytestconf.go).
		Pytest        map[string]any `toml:"pytest"`
		SetuptoolsScm struct {
			WriteTo     string `toml:"write_to"`
			VersionFile string `toml:"version_file"`
		} `toml:"setuptools_scm"`
	} `toml:"tool"`
}

// readPyproject parses the repository's pyproject.toml; a missing or
// broken file is an empty one.
func readPyproject(repo string) pyproject {
	var p pyproject
	data, err := os.ReadFile(filepath.Join(repo, "pyproject.toml"))
	if err == nil {
		toml.Unmarshal(data, &p) //nolint:errcheck // a broken file reads as what parsed
	}
	return p
}

// projectExtras are the names of the project's optional dependencies.
func projectExtras(repo string) []string {
	var out []string
	for k := range readPyproject(repo).Project.OptionalDependencies {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// dependencyGroup is a PEP 735 dependency group's requirements, with
// {include-group = "..."} entries followed.
func dependencyGroup(repo, name string, depth int) []string {
	if depth > 8 {
		return nil
	}
	pp := readPyproject(repo)
	groups := pp.DependencyGroups
	var out []string
	// Poetry's groups ([tool.poetry.group.NAME.dependencies], and the old
	// dev-dependencies) name packages with Poetry's own version syntax:
	// the names are what pip can use.
	poetry := pp.Tool.Poetry.Group[name].Dependencies
	if name == "dev" && len(poetry) == 0 {
		poetry = pp.Tool.Poetry.DevDependencies
	}
	for n := range poetry {
		if n != "python" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	for k, list := range pp.Tool.Pdm.DevDependencies {
		if env.RequirementName(k) == env.RequirementName(name) || name == "dev" {
			out = append(out, list...)
		}
	}
	for k, list := range groups {
		if env.RequirementName(k) != env.RequirementName(name) {
			continue
		}
		for _, item := range list {
			switch x := item.(type) {
			case string:
				out = append(out, x)
			case map[string]any:
				if inc, ok := x["include-group"].(string); ok {
					out = append(out, dependencyGroup(repo, inc, depth+1)...)
				}
			}
		}
	}
	return out
}
