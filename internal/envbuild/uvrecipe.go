package envbuild

import (
	"path/filepath"
	"slices"
	"strings"

	"cwm/internal/env"
)

// uvRunNote is what a test command unwrapped from uv run says in its
// provenance: uv run would run it in the project's environment, which is
// the environment's venv; the command runs there with the venv's Python
// first on PATH, and the test step needs neither uv nor the network.
const uvRunNote = " (uv run unwrapped: the venv is uv's project environment)"

// ciLine is one line of a CI step as recipe detection takes it, and what
// its provenance adds (uvRunNote for a command uv run would have run).
type ciLine struct {
	line, note string
}

// keepUV is unwrapLine for recipe detection: a uv install line (uv sync,
// uv pip install|sync) stays as written, since an online build runs it
// with uv (the installer translates it to pip where uv is not used:
// offline, --wheelhouse, or when uv cannot be had); uv run becomes the
// install uv run performs, written as uv would do it (uvRunInstall), and
// the command itself. Everything else is unwrapLine's.
func keepUV(line, repo string) []ciLine {
	prefix, vars, words := splitCd(line)
	if len(vars) > 0 {
		prefix += strings.Join(vars, " ") + " "
	}
	if uvInstallWords(words) {
		return []ciLine{{line: line}}
	}
	if len(words) > 2 && words[0] == "uv" && words[1] == "run" {
		o, cmd := uvOptions(words[2:])
		if len(cmd) > 0 {
			var out []ciLine
			for _, l := range uvRunInstall(words[2:len(words)-len(cmd)], o) {
				out = append(out, ciLine{line: prefix + l})
			}
			return append(out, ciLine{line: prefix + strings.Join(cmd, " "), note: uvRunNote})
		}
	}
	var out []ciLine
	for _, l := range unwrapLine(line, repo) {
		out = append(out, ciLine{line: l})
	}
	return out
}

// splitCd splits "[cd DIR &&] [VAR=value...] [sudo] REST" into its
// prefix, the variables and REST's words, with python -m uv read as uv.
func splitCd(line string) (prefix string, vars, words []string) {
	rest := line
	if strings.HasPrefix(rest, "cd ") {
		if i := strings.Index(rest, " && "); i > 0 {
			prefix, rest = rest[:i+4], rest[i+4:]
		}
	}
	words = strings.Fields(rest)
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		vars, words = append(vars, words[0]), words[1:]
	}
	words = withoutSudo(words)
	if len(words) > 2 && isPythonName(filepath.Base(words[0])) && words[1] == "-m" && words[2] == "uv" {
		words = words[2:]
	}
	return prefix, vars, words
}

// uvInstallWords reports whether words are an install uv runs in the
// project's environment: uv sync, uv pip install or uv pip sync.
func uvInstallWords(words []string) bool {
	switch {
	case len(words) > 1 && words[0] == "uv" && words[1] == "sync":
		return true
	case len(words) > 2 && words[0] == "uv" && words[1] == "pip" && (words[2] == "install" || words[2] == "sync"):
		return true
	}
	return false
}

// usesUV reports whether any of the recipe's install steps is a uv
// install line.
func (r Recipe) usesUV() bool {
	return slices.ContainsFunc(r.Install, func(s env.Step) bool { return isUVInstall(s.Command) })
}

// isUVInstall reports whether a step's command is a uv install line
// ([cd DIR &&] uv sync|uv pip install|uv pip sync ...).
func isUVInstall(command string) bool {
	_, _, words := splitCd(command)
	return uvInstallWords(words)
}

// uvSyncOptions are the options of uv run that say what its sync
// installs, and uv sync takes as they are (those of uvValueOptions with
// a value).
var uvSyncOptions = map[string]bool{
	"--extra": true, "--all-extras": true, "--no-extra": true, "--group": true, "--only-group": true,
	"--no-group": true, "--all-groups": true, "--no-dev": true, "--only-dev": true, "--dev": true,
	"--no-default-groups": true, "--frozen": true, "--locked": true, "--package": true, "--all-packages": true,
	"--resolution": true, "--prerelease": true, "--no-editable": true, "--index": true, "--index-url": true,
	"--default-index": true, "--extra-index-url": true,
}

// uvRunInstall is the install uv run performs before it runs its command,
// as uv lines: an inexact uv sync with the run's options that choose what
// it installs (none with --no-sync, --no-project or --isolated, which
// sync nothing), then uv pip install of its --with requirements.
// Unwrapped for pip (unwrapLine), they install what unwrapLine's uv run
// installs.
func uvRunInstall(opts []string, o uvOpts) []string {
	var out []string
	if !o.noProject && !hasWord(opts, "--no-sync") {
		sync := []string{"uv", "sync", "--inexact"}
		for i := 0; i < len(opts); i++ {
			name, _, hasVal := strings.Cut(opts[i], "=")
			if !uvSyncOptions[name] {
				if uvValueOptions[name] && !hasVal {
					i++ // its value
				}
				continue
			}
			sync = append(sync, opts[i])
			if uvValueOptions[name] && !hasVal && i+1 < len(opts) {
				i++
				sync = append(sync, opts[i])
			}
		}
		out = append(out, strings.Join(sync, " "))
	}
	var with []string
	for _, w := range o.with {
		if w != "" && !isTooling(env.RequirementName(w)) {
			with = append(with, quoteArg(w))
		}
	}
	if len(with) > 0 {
		out = append(out, "uv pip install "+strings.Join(with, " "))
	}
	return out
}

func hasWord(words []string, w string) bool {
	for _, x := range words {
		if x == w {
			return true
		}
	}
	return false
}

// uvCommand is the command a uv run, uvx or uv tool run line runs
// ("uv run --no-sync pytest -x" is "pytest -x"), and whether line was one:
// what a Makefile target's recipe runs through uv.
func uvCommand(line string) (string, bool) {
	prefix, vars, words := splitCd(line)
	if len(vars) > 0 {
		prefix += strings.Join(vars, " ") + " "
	}
	skip := 0
	switch {
	case len(words) > 2 && words[0] == "uv" && words[1] == "run":
		skip = 2
	case len(words) > 1 && words[0] == "uvx":
		skip = 1
	case len(words) > 3 && words[0] == "uv" && words[1] == "tool" && words[2] == "run":
		skip = 3
	default:
		return line, false
	}
	_, cmd := uvOptions(words[skip:])
	if len(cmd) == 0 {
		return line, false
	}
	return prefix + strings.Join(cmd, " "), true
}
