package envbuild

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cwm/internal/egress"
	"cwm/internal/env"
	"cwm/internal/sandbox"
	"cwm/internal/testrun"
)

// pipWords is how a step's pip install starts in the installer's mode.
// Offline: the base's pip, no index, no build isolation. Online: pip from
// its wheel with the venv's Python, PEP 517 builds in isolation, the index
// the installer's environment names (through the relay), resolution
// bounded by the exclude-newer date, and a report (the lock) written to
// report. Wheelhouse: the same with the staged wheels and no index.
func (in *installer) pipWords(report string) []string {
	if in.mode == env.ModeOffline {
		return []string{"python", "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--no-index", "--no-build-isolation"}
	}
	// Build dependencies in pip's own process (pip 26's inprocess-build-deps):
	// the launcher then sees their downloads too, and they take the
	// build's find-links and index as the install does.
	// No bytecode at install (--no-compile): the build's warm-up
	// compiles the venv once, in parallel, after every step (install).
	w := []string{env.VenvRoot + "/bin/python", toolsPipMain, "install", "--disable-pip-version-check", "--no-input", "--use-feature=inprocess-build-deps", "--no-compile"}
	if report != "" {
		w = append(w, "--report", report)
	}
	if in.mode == env.ModeWheelhouse || in.noIndex {
		return append(w, "--no-index", "--find-links", toolsWheels)
	}
	if in.exclude != "" {
		w = append(w, "--uploaded-prior-to="+in.exclude)
	}
	return w
}

// pipFunc makes pip and pip3 in a line bash runs as written the
// environment's: the system's pip is on PATH, and would install outside
// /venv.
func (in *installer) pipFunc() string {
	if in.mode == env.ModeOffline {
		return venvPip
	}
	// python -m pip too: the venv has no pip module.
	return `pip() { if [ "$1" = install ]; then shift; set -- install --report ` + shellReports + `-$BASHPID-$RANDOM.json ` + strings.Join(in.pipWords("")[3:], " ") + ` "$@"; fi; ` +
		env.VenvRoot + `/bin/python ` + toolsPipMain + ` "$@"; }; pip3() { pip "$@"; }; ` +
		// python's flags may come before -m and join it (python -Im pip).
		`_cwm_python() { local py=$1 n=0 a; shift; for a in "$@"; do n=$((n+1)); case $a in ` +
		`-m|-[` + pythonFlagChars + `]*m) if [ "${@:n+1:1}" = pip ] || [ "${@:n+1:1}" = pip3 ]; then shift $((n+1)); pip "$@"; return; fi; break ;; ` +
		`-[` + pythonFlagChars + `]*) ;; *) break ;; esac; done; command "$py" "$@"; }; ` +
		`python() { _cwm_python python "$@"; }; python3() { _cwm_python python3 "$@"; }; `
}

// hint says what to try when a step fails, in the installer's mode.
func (in *installer) hint() string {
	switch in.mode {
	case env.ModeOnline:
		return "see build.log; a package the index lacks or a build that needs system libraries can be overridden with --install, or built with --offline on the host's packages"
	case env.ModeWheelhouse:
		return "see build.log; add what it lacks to the wheelhouse, or override the step with --install"
	}
	return installHint
}

// failHint is the hint of a failed step whose output is out. Where out
// says the build lacks a system library cwm knows the Debian package of,
// it records that (in.sysNeed) and names the packages and the base that
// would have them.
func (in *installer) failHint(out string) string {
	need := systemNeed(out)
	if need == nil {
		return in.hint()
	}
	if in.sysNeed == nil {
		in.sysNeed = &SystemNeed{}
	}
	in.sysNeed.add(need.Evidence, need.Packages...)
	names := strings.Join(need.Packages, ", ")
	if in.mode == env.ModeOffline {
		return fmt.Sprintf("see build.log; it needs the Debian packages %s (%q): install them on the host (apt-get install %s), or build online on a Debian base",
			names, need.Evidence, strings.Join(need.Packages, " "))
	}
	return fmt.Sprintf("see build.log; it needs the Debian packages %s (%q): build on a base that has them (cwm base build --debian SUITE --packages %s, then --base DIGEST; online builds on a Debian base do that themselves unless --system-packages=false)",
		names, need.Evidence, strings.Join(need.Packages, ","))
}

// readReport adds what a pip run installed (its --report) to the lock.
func (in *installer) readReport(ctx context.Context, report string) error {
	if report == "" {
		return nil
	}
	data, err := in.s.ReadFile(ctx, report, 64<<20)
	if err != nil {
		return fmt.Errorf("read pip's report %s: %w", report, err)
	}
	in.lock, err = addReport(in.lock, data)
	return err
}

// planLocked prepares a --locked build: the lock's packages split into
// those the wheel cache holds (staged in the tools' wheelhouse, installed
// with no index) and those to fetch from the index. Every other step runs
// with no index too when the cache holds all of the lock's files, build
// entries included, and the lock has build entries for its local
// projects: a lock written before build entries has none, and its
// projects' isolated builds fetch their backend from the index.
func (in *installer) planLocked(lock []env.LockedPackage, cached map[string]string) {
	in.locked = true
	if in.mode != env.ModeOnline {
		cached = nil // a wheelhouse build has its files in the wheelhouse
	}
	var have, fetch []env.LockedPackage
	all, build, local := true, false, false
	for _, p := range lock {
		if p.Local {
			local = true
			continue
		}
		_, ok := cached[p.SHA256]
		ok = ok && remote(p)
		all = all && ok
		switch {
		case p.Build:
			build = true
		case ok:
			have = append(have, p)
		default:
			fetch = append(fetch, p)
		}
	}
	in.lockCached, in.lockFetch = env.LockRequirements(have), env.LockRequirements(fetch)
	in.noIndex = in.mode == env.ModeOnline && all && (build || !local)
}

// linkedStep records the packages step of a --locked build whose
// packages linkLocked installed.
func (in *installer) linkedStep(st *env.Step) {
	st.Status = "ok"
	st.Run = fmt.Sprintf("(cwm: %d wheels linked from the unpacked-wheel cache, checked against the lock's sha256 and their RECORD)", len(in.link.pkgs))
	if len(in.link.redone) > 0 {
		st.Note = "unpacked again, their cached files no longer matching their wheel: " + strings.Join(in.link.redone, ", ")
	}
	fmt.Fprintf(in.log, "\n%s\n", st.Run)
	for _, p := range in.link.pkgs {
		fmt.Fprintf(in.log, "linked %s==%s (sha256 %s)\n", p.Name, p.Version, p.SHA256)
	}
	in.lock = append(in.lock, in.link.pkgs...)
}

// runLocked installs a --locked build's packages: every artifact must
// match its hash, and nothing is resolved. Those the wheel cache holds
// are installed with no index (pip prefers an index's copy of a file
// over a local one), the rest from the index. An artifact that does not
// match fails the build, naming it: that is tampering or a changed
// index, never something to install around.
func (in *installer) runLocked(ctx context.Context, st *env.Step) error {
	if in.lockCached == "" && in.lockFetch == "" {
		st.Status, st.Note = "skipped", "the lock names no package but local ones"
		return nil
	}
	st.Status = "ok"
	var runs []string
	for _, part := range []struct {
		text, file string
		noIndex    bool
	}{{in.lockCached, lockFile, true}, {in.lockFetch, lockFetchFile, in.noIndex}} {
		if part.text == "" {
			continue
		}
		if err := in.s.WriteFile(ctx, part.file, []byte(part.text), 0o644); err != nil {
			return fmt.Errorf("write the lock into the sandbox: %w", err)
		}
		in.reports++
		report := fmt.Sprintf("/tmp/cwm-pip-report-%d.json", in.reports)
		pip := *in
		pip.noIndex = part.noIndex
		run := strings.Join(append(pip.pipWords(report), "--require-hashes", "--no-deps", "-r", part.file), " ")
		runs = append(runs, run)
		st.Run = strings.Join(runs, " && ")
		res, err := in.exec(ctx, run, "")
		if err != nil {
			return err
		}
		if !res.Success() {
			out := string(res.Stdout) + "\n" + string(res.Stderr)
			if m := hashMismatch().FindStringSubmatch(out); m != nil {
				return inputErrorf("the lock's %s does not match its hash: %s has sha256 %s, the lock says %s", m[1], m[2], m[4], m[3])
			}
			if m := pipMissing().FindStringSubmatch(out); m != nil {
				return inputErrorf("the lock's %s is not available (%s)", m[1], firstError(out))
			}
			st.Status, st.Note = "failed", res.Describe()+": "+firstError(out)+"; "+in.failHint(out)
			return nil
		}
		if err := in.readReport(ctx, report); err != nil {
			return err
		}
	}
	if in.lockCached != "" && in.lockFetch != "" {
		st.Note = "the wheel cache lacked some of the lock's files: those came from the index"
	}
	return nil
}

// unreachedNote names the allowed hosts the relay could not reach (an
// index that is down, a name that does not resolve): a step that failed
// for them says so, rather than only that pip found nothing.
func unreachedNote(s egress.Stats) string {
	return distinctNote("egress could not reach: ", s.Failures)
}

// ensureRunner installs pytest when the test command runs it and no step
// installed it: offline the base's pytest serves, but an online venv has
// only what the recipe installed, and many projects install their test
// runner outside the files cwm reads (a CI action, a developer's habit).
func (in *installer) ensureRunner(ctx context.Context, fw testrun.Framework) (env.Step, bool, error) {
	if in.mode == env.ModeOffline || fw != testrun.Pytest {
		return env.Step{}, false, nil
	}
	// Found, not imported: with no bytecode installed, importing pytest
	// compiled it and its dependencies in memory, a second or more of a
	// rebuild whose install steps take less.
	res, err := in.s.Exec(ctx, sandbox.Cmd{Args: []string{env.VenvRoot + "/bin/python", "-c",
		"import importlib.util, sys; sys.exit(importlib.util.find_spec('pytest') is None)"}, Timeout: time.Minute})
	if err != nil {
		return env.Step{}, false, fmt.Errorf("look for pytest in the venv: %w", err)
	}
	if res.Success() {
		return env.Step{}, false, nil
	}
	st := env.Step{Command: "pip install pytest", Provenance: "cwm (the test command runs pytest, which no install step installed)"}
	if err := in.run(ctx, &st); err != nil {
		return st, false, fmt.Errorf("install step %q: %w", st.Command, err)
	}
	return st, true, nil
}

// shellReports is where the pip of a line bash runs as written writes its
// reports (one per pip run, named by process and a random number: such a
// line may run pip in subshells).
const shellReports = "/tmp/cwm-pip-report-sh"

// readShellReports adds the reports the pip of a line bash ran as written
// left to the lock, and removes them.
func (in *installer) readShellReports(ctx context.Context) error {
	if in.mode == env.ModeOffline {
		return nil
	}
	res, err := in.s.Exec(ctx, sandbox.Cmd{Shell: "ls -tr " + shellReports + "-*.json 2>/dev/null || true", Timeout: time.Minute})
	if err != nil {
		return fmt.Errorf("list pip's reports: %w", err)
	}
	for _, f := range strings.Fields(string(res.Stdout)) {
		if err := in.readReport(ctx, f); err != nil {
			return err
		}
		if _, err := in.s.Exec(ctx, sandbox.Cmd{Args: []string{"rm", "-f", f}, Timeout: time.Minute}); err != nil {
			return fmt.Errorf("remove pip's report %s: %w", f, err)
		}
	}
	return nil
}
