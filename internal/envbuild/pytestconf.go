package envbuild

import (
	"path/filepath"
	"strings"
)

// pytestImports are the top-level modules a repository's pytest
// configuration makes pytest import as it starts: the warning categories
// of filterwarnings (action:message:category:module:lineno, where a
// category such as coverage.exceptions.CoverageWarning is imported) and
// the plugins addopts loads with -p. A tooling package that the
// configuration imports is the suite's dependency: without it pytest stops
// before collecting ("Failed to import filter module 'coverage'").
//
// Every place pytest reads its configuration from is read (pytest.ini,
// pyproject.toml's [tool.pytest.ini_options] and [tool.pytest], tox.ini's
// [pytest], setup.cfg's [tool:pytest]): a module named in any is kept.
func pytestImports(repo string) map[string]bool {
	out := map[string]bool{}
	add := func(filters, addopts []string) {
		for _, f := range filters {
			if m := filterCategoryModule(f); m != "" {
				out[m] = true
			}
		}
		for _, m := range plainPlugins(strings.Join(addopts, " ")) {
			out[m] = true
		}
	}
	for _, src := range []struct{ file, section string }{
		{"pytest.ini", "pytest"}, {"tox.ini", "pytest"}, {"setup.cfg", "tool:pytest"},
	} {
		sec := readINI(filepath.Join(repo, src.file))[src.section]
		if sec == nil {
			continue
		}
		add(strings.Split(sec["filterwarnings"], "\n"), []string{sec["addopts"]})
	}
	pp := readPyproject(repo)
	tables := []map[string]any{pp.Tool.Pytest}
	if io, ok := pp.Tool.Pytest["ini_options"].(map[string]any); ok {
		tables = append(tables, io)
	}
	for _, t := range tables {
		add(tomlStrings(t["filterwarnings"]), tomlStrings(t["addopts"]))
	}
	return out
}

// filterCategoryModule is the top-level module of a filterwarnings entry's
// category when the category is a dotted name outside the builtins
// ("ignore:msg:coverage.exceptions.CoverageWarning" gives "coverage").
func filterCategoryModule(f string) string {
	parts := strings.Split(strings.TrimSpace(f), ":")
	if len(parts) < 3 {
		return ""
	}
	cat := strings.TrimSpace(parts[2])
	mod, _, ok := strings.Cut(cat, ".")
	if !ok || mod == "builtins" || mod == "warnings" {
		return ""
	}
	return mod
}

// plainPlugins are the modules addopts loads with -p (not -p no:NAME).
func plainPlugins(addopts string) []string {
	words := strings.Fields(addopts)
	var out []string
	for i, w := range words {
		name := ""
		switch {
		case w == "-p" && i+1 < len(words):
			name = words[i+1]
		case strings.HasPrefix(w, "-p") && len(w) > 2 && !strings.HasPrefix(w, "--"):
			name = w[2:]
		}
		if name = strings.Trim(name, `'"`); name != "" && !strings.HasPrefix(name, "no:") {
			out = append(out, strings.SplitN(name, ".", 2)[0])
		}
	}
	return out
}

// tomlStrings is a TOML value that is a string (split into its lines) or
// an array of strings.
func tomlStrings(v any) []string {
	if s, ok := v.(string); ok {
		return strings.Split(s, "\n")
	}
	return tomlList(v)
}

// tomlList is the strings of a TOML array (nil for anything else).
func tomlList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// importedTooling reports whether the tooling distribution name (as
// env.RequirementName gives it) provides one of the modules: its name with
// underscores (pytest-cov's pytest_cov, coverage), or a pytest plugin's
// short name (pytest-xdist's xdist).
func importedTooling(name string, modules map[string]bool) bool {
	mod := strings.ReplaceAll(name, "-", "_")
	short, plugin := strings.CutPrefix(mod, "pytest_")
	return modules[mod] || plugin && modules[short]
}
