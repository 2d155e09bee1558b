package swenative

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"cwm/internal/lazyre"
)

// condaToPip maps the conda names of SWE-bench's specifications that are
// not their project's name on the package index; every other conda name
// is taken as the same project on the index. docs/tasks.md has the table.
var condaToPip = map[string]string{
	"matplotlib-base": "matplotlib",
	"pytables":        "tables",
	"msgpack-python":  "msgpack",
	"pyqt":            "PyQt5",
	"python-graphviz": "graphviz",
	"pytorch":         "torch",
	"libsass":         "libsass",
}

// condaDebian are conda packages that are C libraries or programs, not
// Python projects: on a Debian base they are Debian's packages, which the
// base must hold (a build installs none).
var condaDebian = map[string]string{
	"graphviz":   "graphviz",
	"hdf5":       "libhdf5-dev",
	"libnetcdf":  "libnetcdf-dev",
	"netcdf4":    "", // the Python project netCDF4 on the index
	"gdal":       "gdal-bin",
	"proj":       "proj-bin",
	"geos":       "libgeos-dev",
	"eccodes":    "libeccodes0",
	"freetype":   "libfreetype6",
	"libpng":     "libpng16-16",
	"pkg-config": "pkg-config",
	"compilers":  "build-essential",
	"gcc":        "gcc",
	"make":       "make",
	"nodejs":     "nodejs",
	"pandoc":     "pandoc",
	"tk":         "tk",
	"qt":         "qtbase5-dev",
}

// condaDropped are conda names with nothing to install: the interpreter
// and pip's own tooling, which the environment's venv already has.
var condaDropped = map[string]bool{"python": true, "pip": true, "conda": true, "mamba": true}

// Recipe is a specification translated for cwm's env build.
type Recipe struct {
	// Python is the version the specification names; Used the one the
	// build runs (the nearest newer a base has, when none has it), ""
	// when no base has it or a newer one.
	Python, Used string
	// Install are the build's install steps, in the harness's order:
	// the packages, pip_packages, pre_install, install.
	Install []string
	// Instance are the steps the harness runs again in each instance at
	// its base_commit (pre_install's lines that are not apt-get's, and
	// install), with the network: run by Import in the instance's own
	// sandbox over the group's environment (instance.go).
	Instance []string
	// TestPrefix are eval_commands, run before each test command.
	TestPrefix []string
	// Untranslated lists what could not be translated, each with why.
	Untranslated []string
	onIndex      func(name string) bool
}

// translate makes s a recipe for a build on a base whose root filesystem
// is rootfs (for its Debian packages), with the base Pythons available;
// onIndex, when set, says whether the index has a conda name's project.
func translate(s *Spec, pythons []string, rootfs func(py string) string, onIndex func(name string) bool) Recipe {
	f := s.Fields
	r := Recipe{Python: f.Python, Used: nearestPython(f.Python, pythons), onIndex: onIndex}
	debs := installedDebs(rootfs(r.Used))
	deb := func(what, pkg string) {
		if debs[pkg] {
			return
		}
		r.Untranslated = append(r.Untranslated, fmt.Sprintf("%s: Debian package %s is not in the base", what, pkg))
	}
	// conda's python comes with pip, setuptools and wheel, which the
	// harness's installs rely on: a setuptools of the harness's time,
	// with pkg_resources (which setuptools 82 no longer has, and older
	// sphinx imports).
	r.Install = append(r.Install, pipInstall([]string{"setuptools<70", "wheel"}))
	var reqs []string
	switch f.Packages {
	case "":
	case "requirements.txt":
		reqs = append(reqs, r.requirements(s.Requirements)...)
	case "environment.yml":
		reqs = append(reqs, r.environment(s.EnvironmentYML, deb)...)
	default:
		for _, c := range strings.Fields(f.Packages) {
			if p := r.conda(c, deb); p != "" {
				reqs = append(reqs, p)
			}
		}
	}
	if len(reqs) > 0 {
		r.Install = append(r.Install, pipInstall(reqs))
	}
	if len(f.PipPackages) > 0 {
		r.Install = append(r.Install, pipInstall(f.PipPackages))
	}
	for _, line := range f.PreInstall {
		if pkgs, ok := aptPackages(line); ok {
			for _, p := range pkgs {
				deb("pre_install "+line, p)
			}
			continue
		}
		r.Install = append(r.Install, line)
		r.Instance = append(r.Instance, line)
	}
	if f.Install != "" {
		line := f.Install
		if develop, noHook := harnessDevelop(s.Pyproject); develop {
			line = asDevelop(editable(line), noHook)
		}
		r.Install = append(r.Install, line)
		r.Instance = append(r.Instance, editable(line))
	}
	r.TestPrefix = f.EvalCommands
	return r
}

// nearestPython is want if a base has it, else the nearest newer version
// a base has; "" when none.
func nearestPython(want string, have []string) string {
	best := ""
	for _, h := range have {
		if cmpVersion(h, want) >= 0 && (best == "" || cmpVersion(h, best) < 0) {
			best = h
		}
	}
	return best
}

func cmpVersion(a, b string) int {
	var a1, a2, b1, b2 int
	fmt.Sscanf(a, "%d.%d", &a1, &a2)
	fmt.Sscanf(b, "%d.%d", &b1, &b2)
	switch {
	case a1 != b1:
		return a1 - b1
	default:
		return a2 - b2
	}
}

var condaSpec = lazyre.New(`^([A-Za-z0-9_.\-]+)\s*(?:(==|>=|<=|!=|>|<|=)\s*(\S+))?$`)

// conda translates one conda package spec ("numpy", "numpy=1.21",
// "cython>=0.29") to a pip requirement, or "" when it has none (the
// interpreter, pip, a Debian package).
func (r *Recipe) conda(spec string, deb func(what, pkg string)) string {
	m := condaSpec().FindStringSubmatch(strings.TrimSpace(spec))
	if m == nil {
		r.Untranslated = append(r.Untranslated, fmt.Sprintf("conda package %q: not a package spec", spec))
		return ""
	}
	name, op, ver := strings.ToLower(m[1]), m[2], m[3]
	if condaDropped[name] {
		return ""
	}
	if d, ok := condaDebian[name]; ok && d != "" {
		deb("conda package "+spec, d)
		return ""
	}
	if p, ok := condaToPip[name]; ok {
		name = p
	}
	if r.onIndex != nil && !r.onIndex(name) {
		r.Untranslated = append(r.Untranslated, fmt.Sprintf("conda package %s: the index has no project %s (conda's alone)", spec, name))
		return ""
	}
	switch op {
	case "":
		return name
	case "=":
		// conda's "=1.21" is the 1.21 series; an exact build is "==".
		if strings.HasSuffix(ver, "*") {
			return name + "==" + ver
		}
		return name + "==" + ver + ".*"
	}
	return name + op + ver
}

// requirements are the pip requirements of a requirements text: options
// (-c, --index-url, ...) are not carried over, and listed.
func (r *Recipe) requirements(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "-"):
			r.Untranslated = append(r.Untranslated, fmt.Sprintf("requirements line %q: an option, not a requirement", line))
		default:
			out = append(out, line)
		}
	}
	return out
}

// environment is the pip requirements of an environment.yml: its conda
// dependencies translated, its pip list as written.
func (r *Recipe) environment(text string, deb func(what, pkg string)) []string {
	var doc struct {
		Dependencies []any `yaml:"dependencies"`
	}
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		r.Untranslated = append(r.Untranslated, fmt.Sprintf("environment.yml: %v", err))
		return nil
	}
	var out []string
	for _, d := range doc.Dependencies {
		switch d := d.(type) {
		case string:
			if p := r.conda(d, deb); p != "" {
				out = append(out, p)
			}
		case map[string]any:
			pips, _ := d["pip"].([]any)
			for _, p := range pips {
				if s, ok := p.(string); ok {
					out = append(out, r.requirements(s)...)
				}
			}
		}
	}
	return out
}

var aptLine = lazyre.New(`apt-get\s+install\s+([^&;|]*)`)

// aptPackages are the packages an apt-get line installs; ok when the line
// is apt-get's (update, install) and nothing else.
func aptPackages(line string) ([]string, bool) {
	if !strings.Contains(line, "apt-get") && !strings.Contains(line, "apt ") {
		return nil, false
	}
	var pkgs []string
	for _, m := range aptLine().FindAllStringSubmatch(line, -1) {
		for _, w := range strings.Fields(m[1]) {
			if !strings.HasPrefix(w, "-") {
				pkgs = append(pkgs, w)
			}
		}
	}
	return pkgs, true
}

// pipInstall is one pip command installing reqs, each quoted for bash.
// Its stdin is /dev/null, which makes the build run it as written
// (through the relay, into the venv) rather than as a recipe it parses
// and narrows: the harness installs exactly what the specification
// names, pip's own tooling (setuptools==70.0.0, tox) included.
func pipInstall(reqs []string) string {
	q := make([]string, len(reqs))
	for i, r := range reqs {
		q[i] = shellQuote(r)
	}
	return "python -m pip install " + strings.Join(q, " ") + " </dev/null"
}

var plainWord = lazyre.New(`^[A-Za-z0-9_\-./:=@+,\[\]]+$`)

func shellQuote(s string) string {
	if plainWord().MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// installedDebs are the Debian packages of a base's root filesystem, by
// its dpkg status file.
func installedDebs(rootfs string) map[string]bool {
	out := map[string]bool{}
	if rootfs == "" {
		return out
	}
	b, err := os.ReadFile(filepath.Join(rootfs, "var", "lib", "dpkg", "status"))
	if err != nil {
		return out
	}
	pkg := ""
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "Package: "):
			pkg = strings.TrimPrefix(line, "Package: ")
		case strings.HasPrefix(line, "Status: ") && strings.HasSuffix(line, " installed"):
			out[pkg] = true
		}
	}
	return out
}
