package envbuild

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"cwm/internal/env"
	"cwm/internal/lazyre"
	"cwm/internal/sandbox"
)

// depCheck lists the requirements that are not satisfied in the venv: the
// given ones and those of every project installed in editable mode from
// /repo (with the chosen extras). It runs inside the sandbox with the
// venv's Python, so it sees exactly what the tests will.
const depCheck = `
import json, sys
import importlib.metadata as md
try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.utils import canonicalize_name
reqs, extras = json.loads(sys.argv[1]), json.loads(sys.argv[2])
todo = [tuple(r) for r in reqs]
for dist in md.distributions():
    try:
        info = json.loads(dist.read_text("direct_url.json") or "{}")
    except Exception:
        continue
    if info.get("dir_info", {}).get("editable") and info.get("url", "").startswith("file:///repo"):
        todo += [(r, "project metadata") for r in (dist.requires or [])]
out, seen = [], set()
for text, why in todo:
    try:
        r = Requirement(text)
    except Exception:
        continue
    if r.marker is not None and not any(r.marker.evaluate({"extra": e}) for e in (extras or [""])):
        continue
    name = canonicalize_name(r.name)
    if name in seen:
        continue
    seen.add(name)
    try:
        v = md.version(r.name)
    except md.PackageNotFoundError:
        v = None
    ok = v is not None
    if ok and r.specifier:
        try:
            ok = r.specifier.contains(v, prereleases=True)
        except Exception:
            pass
    if not ok:
        out.append({"requirement": text, "installed": v or "", "source": why or "install step"})
print(json.dumps(out))
`

// versioners are the build requirements that make a project's version
// from its git tags. Offline, builds run without isolation, so an absent
// one fails the build (or leaves the import-root fallback at 0.0.0).
var versioners = map[string]bool{"setuptools-scm": true, "hatch-vcs": true, "flit-scm": true}

// checkDependencies runs depCheck and adds what it finds to in.missing:
// the install steps' requirements, the project's (editable installs) and
// the project's versioner in pyproject.toml's build-system.
func (in *installer) checkDependencies(ctx context.Context, python string) error {
	var todo [][2]string
	for _, r := range in.reqs {
		todo = append(todo, [2]string{r, ""})
	}
	for _, r := range readPyproject(in.repo).BuildSystem.Requires {
		if versioners[env.RequirementName(r)] {
			todo = append(todo, [2]string{r, "build-system"})
		}
	}
	if todo == nil {
		todo = [][2]string{}
	}
	reqs, _ := json.Marshal(todo)
	extras, _ := json.Marshal(nonNil(in.extras))
	var vars []string
	if in.mode != env.ModeOffline {
		// The venv has neither packaging nor pip: pip's wheel has both.
		vars = []string{"PYTHONPATH=" + toolsPipLib}
	}
	res, err := in.s.Exec(ctx, sandbox.Cmd{Args: []string{python, "-c", depCheck, string(reqs), string(extras)},
		Env: vars, Timeout: 2 * time.Minute, Capture: 1 << 20})
	if err != nil {
		return fmt.Errorf("check dependencies: %w", err)
	}
	if !res.Success() {
		fmt.Fprintf(in.log, "\ndependency check failed: %s\n%s", res.Describe(), res.Stderr)
		return nil
	}
	var found []struct {
		Requirement string `json:"requirement"`
		Installed   string `json:"installed"`
		Source      string `json:"source"`
	}
	if err := json.Unmarshal(res.Stdout, &found); err != nil {
		return fmt.Errorf("check dependencies: %w", err)
	}
	for _, f := range found {
		if isTooling(env.RequirementName(f.Requirement)) {
			continue // a type checker in the project's dev extra is not what tests import
		}
		in.addMissing(env.Missing{Requirement: f.Requirement, Installed: f.Installed, Source: f.Source})
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// importNames maps distributions whose import name differs from their
// name.
var importNames = map[string]string{
	"pyyaml": "yaml", "beautifulsoup4": "bs4", "pillow": "PIL", "scikit-learn": "sklearn",
	"scikit-image": "skimage", "python-dateutil": "dateutil", "attrs": "attr", "pyjwt": "jwt",
	"opencv-python": "cv2", "opencv-python-headless": "cv2", "protobuf": "google.protobuf",
	"pyserial": "serial", "pycryptodome": "Crypto", "pyopenssl": "OpenSSL", "msgpack-python": "msgpack",
	"python-magic": "magic", "pymysql": "pymysql", "psycopg2-binary": "psycopg2",
	"typing-extensions": "typing_extensions", "setuptools-scm": "setuptools_scm",
	"pygobject": "gi", "dnspython": "dns", "markdown": "markdown", "docutils": "docutils",
	"flit-core": "flit_core", "poetry-core": "poetry.core",
	"python-dotenv": "dotenv", "pysocks": "socks",
}

// debianNames maps import names whose Debian package is not python3-NAME.
var debianNames = map[string]string{
	"yaml": "python3-yaml", "bs4": "python3-bs4", "PIL": "python3-pil", "sklearn": "python3-sklearn",
	"skimage": "python3-skimage", "dateutil": "python3-dateutil", "attr": "python3-attr",
	"jwt": "python3-jwt", "cv2": "python3-opencv", "google": "python3-protobuf",
	"serial": "python3-serial", "Crypto": "python3-pycryptodome", "OpenSSL": "python3-openssl",
	"gi": "python3-gi", "dns": "python3-dnspython", "typing_extensions": "python3-typing-extensions",
	"setuptools_scm": "python3-setuptools-scm", "flit_core": "flit", "poetry": "python3-poetry-core",
	"hatchling": "python3-hatchling", "psycopg2": "python3-psycopg2", "magic": "python3-magic",
	"dotenv": "python3-dotenv", "socks": "python3-socks",
}

// importName is the module a requirement provides, by the table or by the
// usual convention (lower case, dashes as underscores).
func importName(req string) string {
	name := env.RequirementName(req)
	if m, ok := importNames[name]; ok {
		return topModule(m)
	}
	// A dotted name is a portion of a namespace package, imported by
	// that name (zope.interface, jaraco.functools, ruamel.yaml).
	if raw := strings.ToLower(rawName(req)); strings.Contains(raw, ".") {
		return raw
	}
	return strings.ReplaceAll(name, "-", "_")
}

// rawName is a requirement's name as written, before normalisation.
func rawName(req string) string {
	req = strings.TrimSpace(req)
	end := strings.IndexFunc(req, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	})
	if end < 0 {
		return req
	}
	return req[:end]
}

var (
	aptMu    sync.Mutex          // guards aptCache
	aptCache = map[string]bool{} // package name -> apt knows it
)

// aptKnows asks the host's apt metadata whether a package exists. Without
// apt (or its lists) nothing is known and only the table answers.
func aptKnows(ctx context.Context, pkg string) bool {
	aptMu.Lock()
	defer aptMu.Unlock()
	if v, ok := aptCache[pkg]; ok {
		return v
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "apt-cache", "show", "--no-all-versions", pkg).Output()
	ok := err == nil && strings.Contains(string(out), "Package: ")
	aptCache[pkg] = ok
	return ok
}

// debianPackage finds the Debian package that provides a module: the
// table, then python3-NAME for the import and the distribution name, as
// far as apt knows them.
func debianPackage(ctx context.Context, m env.Missing) string {
	if p, ok := debianNames[m.Import]; ok {
		return p
	}
	// Debian keeps a namespace portion's dot: python3-zope.interface.
	cands := []string{"python3-" + strings.ToLower(strings.ReplaceAll(m.Import, "_", "-"))}
	if m.Requirement != "" {
		cands = append(cands, "python3-"+env.RequirementName(m.Requirement))
	}
	for _, c := range cands {
		if aptKnows(ctx, c) {
			return c
		}
	}
	return ""
}

var noModule = lazyre.New(`(?:ModuleNotFoundError|ImportError): No module named '?([A-Za-z0-9_.]+)'?`)

// missingFromOutput finds modules tests failed to import, except the
// repository's own (a broken import inside the project is a bug, not a
// missing dependency).
func missingFromOutput(repo string, outputs ...[]byte) []string {
	seen := map[string]bool{}
	var out []string
	for _, o := range outputs {
		for _, m := range noModule().FindAllSubmatch(o, -1) {
			top := topModule(string(m[1]))
			if seen[top] || ownModule(repo, top) {
				continue
			}
			seen[top] = true
			out = append(out, top)
		}
	}
	sort.Strings(out)
	return out
}

func ownModule(repo, mod string) bool {
	for _, d := range []string{"", "src", "lib"} {
		base := filepath.Join(repo, d, mod)
		if st, err := os.Stat(base); err == nil && st.IsDir() {
			return true
		}
		if fileExists(base + ".py") {
			return true
		}
	}
	return false
}

// finishMissing fills in import names and, for an offline build (debian),
// Debian packages: an online build's dependencies come from the index, so
// a Debian package would be the wrong advice. On the host base, a Debian
// package that is installed already (pip found no version that satisfies
// the requirement among the host's) is too old: its version becomes
// Installed, so that the hint does not name it for installing.
func finishMissing(ctx context.Context, ms []env.Missing, hostBase, debian bool) []env.Missing {
	for i := range ms {
		if ms[i].Import == "" {
			ms[i].Import = importName(ms[i].Requirement)
		}
		if !debian {
			continue
		}
		if ms[i].Debian == "" {
			ms[i].Debian = debianPackage(ctx, ms[i])
		}
		if hostBase && ms[i].Debian != "" && ms[i].Installed == "" {
			if v := dpkgVersion(ctx, ms[i].Debian); v != "" {
				ms[i].Installed = v + " (Debian)"
			}
		}
	}
	return ms
}

// dpkgVersion is the version of an installed Debian package on the host,
// "" when it is not installed or dpkg cannot say.
func dpkgVersion(ctx context.Context, pkg string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f", "${Status}\t${Version}", pkg).Output()
	status, version, ok := strings.Cut(string(out), "\t")
	if err != nil || !ok || !strings.HasSuffix(status, " installed") {
		return ""
	}
	return strings.TrimSpace(version)
}
