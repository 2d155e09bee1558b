package envbuild

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"cwm/internal/lazyre"
)

// pythonNeed is what a project says of the Python it runs on: a
// specifier the versions must satisfy and the versions it tests on. Both
// may be empty (a project that says nothing runs on any Python).
type pythonNeed struct {
	// Spec is a requires-python specifier (">=3.8,<4"); SpecFrom where it
	// was read.
	Spec, SpecFrom string
	// Listed are the X.Y versions the project names (trove classifiers,
	// the CI job's matrix, tox's envlist), ascending; ListedFrom where.
	Listed     []string
	ListedFrom string
}

// detectPythonNeed reads the project's files for its Python: the
// specifier from pyproject.toml's requires-python (or Poetry's python
// dependency), setup.cfg's python_requires or a literal python_requires
// in setup.py; the versions from the chosen CI job's matrix, else tox's
// envlist, else the trove classifiers. It reads and never runs anything.
func detectPythonNeed(repo string) pythonNeed {
	var n pythonNeed
	py := readPyprojectPython(repo)
	cfg := readINI(filepath.Join(repo, "setup.cfg"))
	setupPy, _ := os.ReadFile(filepath.Join(repo, "setup.py"))
	switch {
	case py.requires != "":
		n.Spec, n.SpecFrom = py.requires, "pyproject.toml requires-python"
	case py.poetry != "":
		n.Spec, n.SpecFrom = poetrySpec(py.poetry), "pyproject.toml [tool.poetry.dependencies] python"
	case cfg != nil && cfg["options"]["python_requires"] != "":
		n.Spec, n.SpecFrom = cfg["options"]["python_requires"], "setup.cfg python_requires"
	default:
		if m := setupPyRequires().FindSubmatch(setupPy); m != nil {
			n.Spec, n.SpecFrom = string(m[2]), "setup.py python_requires"
		}
	}
	n.Spec = strings.Join(strings.Fields(n.Spec), "")
	if vs, from := workflowPythons(repo); len(vs) > 0 {
		n.Listed, n.ListedFrom = vs, from
	} else if vs, from := toxPythons(repo); len(vs) > 0 {
		n.Listed, n.ListedFrom = vs, from
	} else {
		var text strings.Builder
		text.WriteString(strings.Join(py.classifiers, "\n"))
		if cfg != nil {
			text.WriteString("\n" + cfg["metadata"]["classifiers"])
		}
		text.Write(setupPy)
		var vs []string
		for _, m := range classifierPython().FindAllStringSubmatch(text.String(), -1) {
			vs = append(vs, m[1])
		}
		if vs = sortedVersions(vs); len(vs) > 0 {
			n.Listed, n.ListedFrom = vs, "trove classifiers"
		}
	}
	return n
}

var (
	setupPyRequires  = lazyre.New(`python_requires\s*=\s*(["'])([^"']+)["']`)
	classifierPython = lazyre.New(`Programming Language :: Python :: (\d+\.\d+)\b`)
	// toxPy is a tox environment's Python factor: py38, py310, py3.11.
	toxPy = lazyre.New(`^py(3)\.?(\d+)$`)
)

type pyprojectPython struct {
	requires, poetry string
	classifiers      []string
}

func readPyprojectPython(repo string) pyprojectPython {
	data, err := os.ReadFile(filepath.Join(repo, "pyproject.toml"))
	if err != nil {
		return pyprojectPython{}
	}
	var t struct {
		Project struct {
			RequiresPython string   `toml:"requires-python"`
			Classifiers    []string `toml:"classifiers"`
		} `toml:"project"`
		Tool struct {
			Poetry struct {
				Dependencies map[string]any `toml:"dependencies"`
				Classifiers  []string       `toml:"classifiers"`
			} `toml:"poetry"`
		} `toml:"tool"`
	}
	if _, err := toml.Decode(string(data), &t); err != nil {
		return pyprojectPython{}
	}
	p := pyprojectPython{requires: t.Project.RequiresPython, classifiers: append(t.Project.Classifiers, t.Tool.Poetry.Classifiers...)}
	if s, ok := t.Tool.Poetry.Dependencies["python"].(string); ok {
		p.poetry = s
	}
	return p
}

// poetrySpec turns Poetry's caret and tilde constraints into PEP 440
// specifiers: ^3.8 is >=3.8,<4.0; ~3.8 is >=3.8,<3.9.
func poetrySpec(s string) string {
	var out []string
	for _, c := range strings.Split(s, ",") {
		c = strings.TrimSpace(c)
		switch {
		case strings.HasPrefix(c, "^"):
			v := parseVersion(c[1:])
			out = append(out, ">="+c[1:], "<"+strconv.Itoa(v[0]+1)+".0")
		case strings.HasPrefix(c, "~") && !strings.HasPrefix(c, "~="):
			v := parseVersion(c[1:])
			if len(v) < 2 {
				v = append(v, 0)
			}
			out = append(out, ">="+c[1:], "<"+strconv.Itoa(v[0])+"."+strconv.Itoa(v[1]+1))
		case c == "*" || c == "":
		default:
			out = append(out, c)
		}
	}
	return strings.Join(out, ",")
}

// toxPythons lists the Python factors of tox's envlist (py{38,39,310},
// py311-django, 3.12 in tox.toml's env_list).
func toxPythons(repo string) ([]string, string) {
	cfg, file := toxConfig(repo)
	if cfg == nil {
		return nil, ""
	}
	list := cfg["tox"]["envlist"]
	if list == "" {
		list = cfg["tox"]["env_list"]
	}
	var vs []string
	for _, name := range expandBraces(list) {
		for _, f := range strings.Split(name, "-") {
			if m := toxPy().FindStringSubmatch(f); m != nil {
				vs = append(vs, m[1]+"."+m[2])
			} else if isMajorMinor(f) {
				vs = append(vs, f)
			}
		}
	}
	return sortedVersions(vs), file + " envlist"
}

// expandBraces splits an envlist into names, expanding tox's brace sets:
// py{38,39}-{a,b} is py38-a, py38-b, py39-a, py39-b.
func expandBraces(list string) []string {
	var names []string
	depth, start := 0, 0
	split := func(end int) {
		if s := strings.TrimSpace(list[start:end]); s != "" {
			names = append(names, s)
		}
	}
	for i, r := range list {
		switch {
		case r == '{':
			depth++
		case r == '}':
			depth--
		case depth == 0 && (r == ',' || r == '\n'):
			split(i)
			start = i + 1
		}
	}
	split(len(list))
	var out []string
	for _, n := range names {
		out = append(out, expandOne(n)...)
	}
	return out
}

func expandOne(name string) []string {
	open := strings.Index(name, "{")
	closing := strings.Index(name, "}")
	if open < 0 || closing < open {
		return []string{name}
	}
	var out []string
	for _, alt := range strings.Split(name[open+1:closing], ",") {
		out = append(out, expandOne(name[:open]+strings.TrimSpace(alt)+name[closing+1:])...)
	}
	return out
}

func isMajorMinor(s string) bool {
	a, b, ok := strings.Cut(s, ".")
	_, errA := strconv.Atoi(a)
	_, errB := strconv.Atoi(b)
	return ok && errA == nil && errB == nil && a == "3"
}

// sortedVersions is vs without duplicates, in version order.
func sortedVersions(vs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range vs {
		if !seen[v] && isMajorMinor(v) {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return compareVersions(parseVersion(out[i]), parseVersion(out[j])) < 0 })
	return out
}

// parseVersion reads the release numbers of a version ("3.11.2" is
// [3 11 2]); it stops at the first part that is not a number.
func parseVersion(s string) []int {
	var out []int
	for _, p := range strings.Split(strings.TrimSpace(s), ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			break
		}
		out = append(out, n)
	}
	return out
}

// compareVersions compares release numbers, missing parts counting as 0.
func compareVersions(a, b []int) int {
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y int
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// specAllows reports whether the Python version v ("3.11" or "3.11.2")
// satisfies the PEP 440 specifier spec (">=3.8,!=3.9.*,<4"). When v has
// no micro version, clauses are compared on major and minor only, so
// ">=3.8.1" allows "3.8": a base named by its minor version is taken to
// be a recent release of it. An unreadable clause allows everything.
func specAllows(spec, v string) bool {
	have := parseVersion(v)
	for _, c := range strings.Split(spec, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		op := ""
		for _, o := range []string{"===", "~=", "==", "!=", ">=", "<=", ">", "<"} {
			if strings.HasPrefix(c, o) {
				op = o
				break
			}
		}
		ver := strings.TrimSpace(c[len(op):])
		wild := strings.HasSuffix(ver, ".*")
		want := parseVersion(strings.TrimSuffix(ver, ".*"))
		if op == "" || len(want) == 0 {
			continue
		}
		h, full := have, want
		if len(have) < 3 && len(want) > len(have) {
			want = want[:len(have)]
		}
		if wild && len(h) > len(want) {
			h = h[:len(want)]
		}
		cmp := compareVersions(h, want)
		ok := true
		switch op {
		case "==", "===":
			ok = cmp == 0
		case "!=":
			ok = cmp != 0
		case ">=":
			ok = cmp >= 0
		case "<=":
			ok = cmp <= 0
		case ">":
			ok = cmp > 0
		case "<":
			ok = cmp < 0
		case "~=":
			// ~=3.8 is >=3.8,==3.*; ~=3.8.1 is >=3.8.1,==3.8.*
			prefix := full
			if len(prefix) > 1 {
				prefix = prefix[:len(prefix)-1]
			}
			hp := have
			if len(hp) > len(prefix) {
				hp = hp[:len(prefix)]
			}
			ok = cmp >= 0 && compareVersions(hp, prefix) == 0
		}
		if !ok {
			return false
		}
	}
	return true
}
