package envbuild

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"cwm/internal/env"
	"cwm/internal/lazyre"
	"cwm/internal/testrun"
)

// installHint says what to try when an install step fails.
const installHint = "see build.log; install what it lacks as Debian packages on the host (python3-NAME), or override the step with --install"

var (
	// errorLine is a line that states a cause: an exception, a
	// configuration or build error.
	errorLine = lazyre.New(`(?i)^(configuration error\b|[A-Za-z_][\w.]*(Error|Exception|Invalid[\w]*)\b:|error: [a-z]|fatal error:|ERROR: )`)
	// genericError are pip's lines that only say that something failed.
	genericError = lazyre.New(`(?i)^(error: (subprocess-exited-with-error|metadata-generation-failed|legacy-install-failure)|ERROR: (Command errored out|Failed building|Could not build wheels|Exception:$))`)
)

// firstError is the first line of a failed step's output that states a
// cause (pip prints its own summary, "hint: See above for details.", last),
// or the last line when none does.
func firstError(out string) string {
	for _, line := range strings.Split(out, "\n") {
		t := strings.TrimSpace(strings.TrimLeft(line, " │║|"))
		if errorLine().MatchString(t) && !genericError().MatchString(t) {
			if len(t) > 300 {
				t = t[:300] + "..."
			}
			return t
		}
	}
	return strings.TrimPrefix(testrun.LastLine([]byte(out)), ": ")
}

// importRootFallback stands in for an editable install whose build step
// failed: the project's import root (its src/ directory, or the project
// directory) goes on the path of the environment's Python through a .pth
// file, and the project's declared dependencies and the step's other
// requirements are installed as requirements. The step says so in its
// note and provenance.
func (in *installer) importRootFallback(ctx context.Context, st *env.Step, p pipPlan, dir string, vars []string, cause string) error {
	var roots, lines, deps, versions []string
	for _, e := range p.editable {
		base, _, _ := strings.Cut(e, "[")
		host := filepath.Join(in.repo, dir, base)
		root := path.Join(env.RepoRoot, dir, base)
		hostRoot := host
		if src := filepath.Join(host, "src"); hasPythonSources(src) {
			root, hostRoot = path.Join(root, "src"), src
		}
		roots = append(roots, root)
		lines = append(lines, root)
		for _, ns := range namespacePortions(hostRoot) {
			lines = append(lines, namespaceFirst(ns, path.Join(root, ns)))
		}
		proj := readPyproject(host)
		deps = append(deps, proj.Project.Dependencies...)
		versions = append(versions, versionFiles(proj, path.Join(env.RepoRoot, dir, base), host)...)
		for _, x := range p.extras {
			deps = append(deps, proj.Project.OptionalDependencies[x]...)
		}
	}
	pth := "printf '%s\\n' " + testrun.Join(lines) + ` > "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_cwm_import_root.pth"`
	for _, v := range versions {
		// The version module a VCS hook would have written at build time.
		pth += " && printf '%s\\n' " + testrun.Join([]string{versionModule}) + " > " + testrun.Join([]string{v})
	}
	res, err := in.exec(ctx, pth, "")
	if err != nil {
		return err
	}
	if !res.Success() {
		st.Status, st.Note = "failed", "the build step failed ("+cause+") and the import root could not be put on the path: "+firstError(string(res.Stderr))
		return nil
	}
	note := fmt.Sprintf("the build step failed (%s); %s put on the path of %s's Python instead", cause, strings.Join(roots, " "), env.VenvRoot)
	if len(versions) > 0 {
		note += "; version file written: " + strings.Join(versions, " ")
	}
	rest := pipPlan{reqs: append(append([]string{}, p.reqs...), deps...)}
	for i := 0; i < len(rest.reqs); i++ {
		if isTooling(env.RequirementName(rest.reqs[i])) {
			rest.reqs = append(rest.reqs[:i:i], rest.reqs[i+1:]...)
			i--
		}
	}
	if len(rest.reqs) > 0 {
		sub := env.Step{Command: st.Command}
		if err := in.runPip(ctx, &sub, rest, dir, vars); err != nil {
			return err
		}
		if sub.Status != "ok" {
			note += "; requirements: " + sub.Status
			if sub.Note != "" {
				note += " (" + sub.Note + ")"
			}
		}
		st.Run = pth + " && " + sub.Run
	} else {
		st.Run = pth
	}
	st.Status, st.Note = "ok", note
	st.Provenance += " (fallback: import root on the path)"
	return nil
}

// namespacePortions are the top-level namespace packages of an import
// root: its directories without __init__.py whose contents are packages
// only (zope/interface/__init__.py), as a distribution's portion of a
// namespace is; a directory of modules (tests/ without __init__.py) is not
// one.
func namespacePortions(root string) []string {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range ents {
		n := d.Name()
		if !d.IsDir() || !identifier().MatchString(n) {
			continue
		}
		sub, err := os.ReadDir(filepath.Join(root, n))
		if err != nil {
			continue
		}
		pkgs, modules := 0, 0
		for _, e := range sub {
			switch {
			case !e.IsDir() && strings.HasSuffix(e.Name(), ".py"):
				modules++
			case e.IsDir():
				if _, err := os.Stat(filepath.Join(root, n, e.Name(), "__init__.py")); err == nil {
					pkgs++
				}
			}
		}
		if pkgs > 0 && modules == 0 {
			out = append(out, n)
		}
	}
	return out
}

var identifier = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// namespaceFirst is a .pth line that makes the repository's portion of the
// namespace package name the first place Python looks for its modules.
// Without it, an older copy of the same distribution installed in the
// system's site-packages wins (Debian's zope.interface under the
// repository's own): such distributions declare their namespace with an
// -nspkg.pth file that makes the namespace module, from their directory
// alone, before any import runs. This line runs first (the venv's .pth
// files are read before the system's) and makes the module with the
// repository's directory first, then every other portion on the path or
// in a site directory; the -nspkg.pth files then find the module made and
// add their own directories after it.
//
// site runs a .pth line with exec inside one of its functions, so names
// the line binds are that function's locals, which a comprehension (a
// function of its own before Python 3.12) cannot see: the code runs
// through exec with a globals dict of its own, where statements and
// comprehensions alike see every name.
func namespaceFirst(name, dir string) string {
	code := fmt.Sprintf(`import os, site, sys, types
m = sys.modules.setdefault(%[1]q, types.ModuleType(%[1]q))
p = m.__dict__.setdefault("__path__", [])
if %[2]q not in p: p.insert(0, %[2]q)
for e in sys.path + site.getsitepackages():
    d = os.path.join(e, %[1]q)
    if d not in p and os.path.isdir(d): p.append(d)
`, name, dir)
	return fmt.Sprintf("import sys; exec(%q, {})", code)
}

// hasPythonSources reports whether dir holds Python code: a module, or a
// package (namespace packages, without __init__.py, included) at most
// three directories down.
func hasPythonSources(dir string) bool {
	found := false
	base := strings.Count(dir, string(filepath.Separator))
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		switch {
		case err != nil || found:
			return filepath.SkipDir
		case d.IsDir() && strings.Count(p, string(filepath.Separator))-base > 3:
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(p, ".py"):
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// versionModule stands in for the version file a VCS build hook writes
// (hatch-vcs, setuptools-scm, pdm), which an import-root fallback lacks.
const versionModule = `__version__ = version = "0.0.0+cwm"
__version_tuple__ = version_tuple = (0, 0, 0, "cwm")`

// versionFiles are the sandbox paths of the version files the project's
// build hooks would write and the repository does not have.
func versionFiles(p pyproject, root, host string) []string {
	var out []string
	for _, f := range []string{p.Tool.Hatch.Build.Hooks.Vcs.VersionFile, p.Tool.SetuptoolsScm.WriteTo,
		p.Tool.SetuptoolsScm.VersionFile, p.Tool.Pdm.Version.WriteTo} {
		if !strings.HasSuffix(f, ".py") || path.IsAbs(f) || strings.Contains(f, "..") || fileExists(filepath.Join(host, f)) {
			continue
		}
		out = append(out, path.Join(root, f))
	}
	return out
}
