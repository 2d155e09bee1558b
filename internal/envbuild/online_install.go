package envbuild

import (
	"context"
	"fmt"
	"net/url"
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
	w := []string{env.VenvRoot + "/bin/python", toolsPip, "install", "--disable-pip-version-check", "--no-input"}
	if report != "" {
		w = append(w, "--report", report)
	}
	if in.mode == env.ModeWheelhouse {
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
		env.VenvRoot + `/bin/python ` + toolsPip + ` "$@"; }; pip3() { pip "$@"; }; ` +
		`_cwm_python() { local py=$1; shift; if [ "$1" = -m ] && { [ "$2" = pip ] || [ "$2" = pip3 ]; }; then shift 2; pip "$@"; else command "$py" "$@"; fi; }; ` +
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

// runLocked installs a --locked build's packages: every artifact must
// match its hash, and nothing is resolved. An artifact that does not
// match fails the build, naming it: that is tampering or a changed
// index, never something to install around.
func (in *installer) runLocked(ctx context.Context, st *env.Step) error {
	if !strings.Contains(in.lockText, "--hash=") {
		st.Status, st.Note = "skipped", "the lock names no package but local ones"
		return nil
	}
	if err := in.s.WriteFile(ctx, lockFile, []byte(in.lockText), 0o644); err != nil {
		return fmt.Errorf("write the lock into the sandbox: %w", err)
	}
	in.reports++
	report := fmt.Sprintf("/tmp/cwm-pip-report-%d.json", in.reports)
	pip := in.pipWords(report)
	if in.localWheels {
		// Every artifact is in the wheel cache: pip prefers an index's
		// copy of a file, so the index is left out of this step.
		local := *in
		local.mode = env.ModeWheelhouse
		pip = local.pipWords(report)
	}
	words := append(pip, "--require-hashes", "--no-deps", "-r", lockFile)
	st.Run = strings.Join(words, " ")
	res, err := in.exec(ctx, st.Run, "")
	if err != nil {
		return err
	}
	if res.Success() {
		st.Status = "ok"
		return in.readReport(ctx, report)
	}
	out := string(res.Stdout) + "\n" + string(res.Stderr)
	if m := hashMismatch().FindStringSubmatch(out); m != nil {
		return inputErrorf("the lock's %s does not match its hash: %s has sha256 %s, the lock says %s", m[1], m[2], m[4], m[3])
	}
	if m := pipMissing().FindStringSubmatch(out); m != nil {
		return inputErrorf("the lock's %s is not available (%s)", m[1], firstError(out))
	}
	st.Status, st.Note = "failed", res.Describe()+": "+firstError(out)+"; "+in.hint()
	return nil
}

// indexEnv points pip at a relay policy's index (the host's, found by
// egress.DefaultPolicy, without credentials); pip reaches it through the
// relay's proxy.
func indexEnv(p egress.Policy) []string {
	var vars []string
	if p.IndexURL != "" {
		vars = append(vars, "PIP_INDEX_URL="+p.IndexURL)
	}
	if len(p.ExtraIndexURLs) > 0 {
		vars = append(vars, "PIP_EXTRA_INDEX_URL="+strings.Join(p.ExtraIndexURLs, " "))
	}
	// An index the host reaches over plain HTTP (a local mirror) is one
	// the host trusts: without saying so, pip would ignore it (or, on the
	// loopback, use it but cache nothing it downloads from it).
	var trusted []string
	for _, u := range append([]string{p.IndexURL}, p.ExtraIndexURLs...) {
		if pu, err := url.Parse(u); err == nil && pu.Scheme == "http" && pu.Host != "" {
			trusted = append(trusted, pu.Host)
		}
	}
	if len(trusted) > 0 {
		vars = append(vars, "PIP_TRUSTED_HOST="+strings.Join(trusted, " "))
	}
	return vars
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
	res, err := in.s.Exec(ctx, sandbox.Cmd{Args: []string{env.VenvRoot + "/bin/python", "-c", "import pytest"}, Timeout: time.Minute})
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
