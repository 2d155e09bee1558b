package envbuild

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"cwm/internal/egress"
	"cwm/internal/env"
	"cwm/internal/lazyre"
	"cwm/internal/sandbox"
	"cwm/internal/testrun"
)

// venvStep makes the environment's virtual environment. It sees the base
// system's packages (that is where offline dependencies come from) and
// has no pip of its own: the system's pip serves it, and 25 MB of
// bundled pip per environment would be most of its size.
var venvStep = env.Step{
	Command:    "python3 -m venv --system-site-packages --without-pip /venv",
	Provenance: "cwm (virtual environment)",
}

// venvStepOnline makes the virtual environment of an online or wheelhouse
// build: its own packages only, and no pip (pip runs from its wheel).
var venvStepOnline = env.Step{
	Command:    "python3 -m venv --without-pip /venv",
	Provenance: "cwm (virtual environment)",
}

// installer runs install steps in one sandbox and collects what could not
// be installed.
type installer struct {
	s       *sandbox.Sandbox
	repo    string // host path of the checkout, for reading requirement files
	log     io.Writer
	timeout time.Duration
	// mode is env.ModeOffline (the base's pip, no index), ModeOnline or
	// ModeWheelhouse (pip from its wheel, with a report for the lock).
	mode string
	// exclude is the --uploaded-prior-to bound of online resolution.
	exclude string
	// env is added to every step's environment: the index pip is to use
	// (the relay's proxy is proxyEnv).
	env []string
	// lock is what the steps installed, from pip's reports.
	lock    []env.LockedPackage
	reports int
	// lockCached and lockFetch are a --locked build's requirements files:
	// the part the wheel cache holds (staged in the tools' wheelhouse) and
	// the rest. noIndex says that every step installs from the staged
	// files alone (planLocked).
	locked                bool
	lockCached, lockFetch string
	noIndex               bool
	// link, when set, is the lock's packages linked into the venv from
	// the unpacked-wheel cache before the steps ran (linkLocked): the
	// packages step has nothing left to install.
	link    *lockLink
	missing []env.Missing
	extras  []string // extras of the project installs, for the dependency check
	reqs    []string // requirements named by install steps

	// egress, when set, is the policy of the relay each step gets;
	// proxyEnv is the running relay's environment for the step's commands.
	egress   *egress.Policy
	proxyEnv []string
	// uv is whether uv install lines run with uv (online builds).
	uv uvState
	// sysNeed is what failed steps said the build lacks from the system
	// (failHint), for a build on a base that has it.
	sysNeed *SystemNeed
	// pytestImports are the modules the repository's pytest configuration
	// imports: tooling among them is installed (keepTooling).
	pytestImports map[string]bool
}

// run runs one step and records how it went in st.
func (in *installer) run(ctx context.Context, st *env.Step) error {
	uv := isUVInstall(st.Command)
	if uv {
		ok, err := in.useUV(ctx, st.Command)
		if err != nil {
			return err
		}
		if !ok {
			return in.runTranslated(ctx, st)
		}
	}
	start := time.Now()
	defer func() { st.Seconds = roundSeconds(time.Since(start)) }()
	if in.locked && st.Command == lockSteps(nil)[0].Command {
		if in.link != nil {
			start = start.Add(-in.link.took) // the linking was this step's work
			in.linkedStep(st)
			return nil
		}
		defer in.relay(ctx, st)()
		return in.runLocked(ctx, st)
	}
	if p, ok := in.link.editable(st.Command); ok {
		st.Status, st.Run = "ok", "(cwm: linked from the editable cache, built by an earlier build of this commit with the same build packages)"
		fmt.Fprintf(in.log, "\n$ %s\n%s\n", st.Command, st.Run)
		in.lock = append(in.lock, p)
		return nil
	}
	defer in.relay(ctx, st)()
	if uv {
		return in.runUV(ctx, st)
	}
	cmds, complex, err := testrun.Words(st.Command)
	if err != nil {
		st.Status, st.Note = "failed", err.Error()
		return nil
	}
	if !complex && len(cmds) > 1 {
		// apt-get update && apt-get install ...: a line of commands that
		// all cannot run here is skipped as one of them would be.
		reason := ""
		for _, c := range cmds {
			_, _, words, ok := simpleCommand([][]string{c})
			if reason = ""; ok {
				reason = unsupported(words)
			}
			if reason == "" {
				break
			}
		}
		if reason != "" {
			st.Status, st.Note = "skipped", reason
			fmt.Fprintf(in.log, "\n$ %s\n(skipped: %s)\n", st.Command, reason)
			return nil
		}
	}
	if !complex && len(cmds) >= 1 {
		dir, vars, words, ok := simpleCommand(cmds)
		if ok {
			if plan, ok := parsePip(words, filepath.Join(in.repo, dir)); ok {
				plan.keepTooling(func(name string) bool {
					return isToxDeps(st) && envTooling[name] || importedTooling(name, in.pytestImports)
				})
				return in.runPip(ctx, st, plan, dir, vars)
			}
			if reason := unsupported(words); reason != "" {
				st.Status, st.Note = "skipped", reason
				fmt.Fprintf(in.log, "\n$ %s\n(skipped: %s)\n", st.Command, reason)
				return nil
			}
		}
	}
	fmt.Fprintf(in.log, "\n$ %s\n", st.Command)
	res, err := in.execQuiet(ctx, in.pipFunc()+st.Command, "")
	if err != nil {
		return err
	}
	st.Status = "ok"
	if !res.Success() {
		out := string(res.Stdout) + "\n" + string(res.Stderr)
		st.Status, st.Note = "failed", res.Describe()+": "+firstError(out)+"; "+in.failHint(out)
	}
	return in.readShellReports(ctx)
}

// simpleCommand takes apart "[cd DIR &&] [K=V...] WORDS".
func simpleCommand(cmds [][]string) (dir string, vars, words []string, ok bool) {
	if len(cmds) == 2 && len(cmds[0]) == 2 && cmds[0][0] == "cd" {
		dir, cmds = cmds[0][1], cmds[1:]
	}
	if len(cmds) != 1 || path.IsAbs(dir) {
		return "", nil, nil, false
	}
	words = cmds[0]
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		vars, words = append(vars, words[0]), words[1:]
	}
	words = withoutSudo(words)
	return dir, vars, words, len(words) > 0
}

// withoutSudo is words without a leading sudo and its options (sudo -E
// apt-get ...): the sandbox's user is root already.
func withoutSudo(words []string) []string {
	if len(words) == 0 || words[0] != "sudo" {
		return words
	}
	words = words[1:]
	for len(words) > 0 && strings.HasPrefix(words[0], "-") {
		words = words[1:]
	}
	return words
}

// aptPackages are the packages an apt-get install line names (options
// and version pins left out: libxml2=2.9.14* is libxml2).
func aptPackages(words []string) []string {
	i := slices.Index(words, "install")
	if i < 0 {
		return nil
	}
	var pkgs []string
	for _, w := range words[i+1:] {
		if w == "&&" || w == ";" || w == "|" {
			break
		}
		if strings.HasPrefix(w, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.Trim(w, `'"`), "=")
		if name != "" && !slices.Contains(pkgs, name) {
			pkgs = append(pkgs, name)
		}
	}
	return pkgs
}

// unsupported says why a command cannot run in an offline sandbox, or ""
// when it can be tried.
func unsupported(words []string) string {
	switch b := path.Base(words[0]); b {
	case "apt", "apt-get", "aptitude":
		if pkgs := aptPackages(words); len(pkgs) > 0 {
			return "system packages cannot be installed in the sandbox: build on a base that has them (cwm base build --debian SUITE --packages " +
				strings.Join(pkgs, ",") + ", then --base DIGEST), or, with --offline, install them on the host"
		}
		return "system packages cannot be installed in the sandbox"
	case "yum", "dnf", "apk", "brew", "choco":
		return "system packages cannot be installed in the sandbox; build on a base that has them (--base), or, with --offline, install them on the host"
	case "conda", "mamba", "micromamba":
		return "conda is not supported; cwm installs with pip into /venv"
	case "poetry", "pipenv", "pdm", "uv", "hatch", "rye":
		return b + " needs the network to resolve; the project is installed with pip instead when another step does so"
	case "curl", "wget", "git":
		return "no network in the sandbox"
	}
	return ""
}

// venvPip makes pip and pip3 in a line bash runs as written the
// environment's (cat r.txt | pip install -r /dev/stdin): the venv has no
// pip of its own (--without-pip), so the pip on PATH is the system's,
// which installs outside /venv.
const venvPip = `pip() { ` + env.VenvRoot + `/bin/python -m pip "$@"; }; pip3() { pip "$@"; }; `

// exec runs a bash command line in the sandbox, logging it and its output.
func (in *installer) exec(ctx context.Context, line, dir string) (sandbox.Result, error) {
	fmt.Fprintf(in.log, "\n$ %s\n", line)
	return in.execQuiet(ctx, line, dir)
}

// execQuiet is exec without the line in the log.
func (in *installer) execQuiet(ctx context.Context, line, dir string) (sandbox.Result, error) {
	return in.execEnv(ctx, line, dir, nil)
}

// execEnv is execQuiet with more environment variables (uv's).
func (in *installer) execEnv(ctx context.Context, line, dir string, extra []string) (sandbox.Result, error) {
	res, err := in.s.Exec(ctx, sandbox.Cmd{Shell: line, Dir: dir, Timeout: in.timeout, Env: slices.Concat(in.proxyEnv, in.env, extra),
		Stdout: in.log, Stderr: in.log, Capture: 64 << 10})
	if err != nil {
		return res, fmt.Errorf("run %q: %w", line, err)
	}
	fmt.Fprintf(in.log, "[%s, %v]\n", res.Describe(), res.Duration.Round(time.Millisecond))
	return res, nil
}

// pipPlan is a pip install taken apart.
type pipPlan struct {
	editable []string // paths installed in editable mode
	reqs     []string // requirement specifiers
	extras   []string
	dropped  []string
	noDeps   bool
	// compat is how the editable targets are installed apart from pip's
	// default (editable.go): venvBuild for a meson-python project from
	// the start; compatIsolated, then compatVenv, as setup.py develop
	// did, after pip refused a backend for lacking PEP 660's hook.
	compat compatMode
}

// pythonFlags are Python's options that take no argument, which may come
// before -m and join it (aiohttp's CI runs python -Im pip install).
var pythonFlags = lazyre.New(`^-[` + pythonFlagChars + `]*m?$`)

// pythonFlagChars are those options' letters, which the shell's python
// function (pipFunc) matches the same way.
const pythonFlagChars = "IEsSuBOqbd"

// pipModule is the index of the word after "python [FLAGS] -m pip", or 0
// when words do not run pip's module.
func pipModule(words []string) int {
	for i := 1; i+1 < len(words) && pythonFlags().MatchString(words[i]) && words[i] != "-"; i++ {
		if strings.HasSuffix(words[i], "m") {
			if words[i+1] == "pip" || words[i+1] == "pip3" {
				return i + 2
			}
			return 0
		}
	}
	return 0
}

// parsePip recognises "pip install ...", "python -m pip install ..." and
// "python setup.py develop|install". Tooling (pip, setuptools, tox, linters)
// is dropped; project paths become editable installs; requirement files are
// read here, so their contents can be narrowed when a requirement is
// missing.
func parsePip(words []string, dir string) (pipPlan, bool) {
	var p pipPlan
	i := 0
	b := path.Base(words[0])
	if isPythonName(b) {
		i = pipModule(words)
	}
	switch {
	case b == "pip" || b == "pip3" || strings.HasPrefix(b, "pip3."):
		i = 1
	case i > 0: // python [FLAGS] -m pip
	case isPythonName(b) && len(words) > 2 && path.Base(words[1]) == "setup.py" && (words[2] == "develop" || words[2] == "install"):
		p.editable = []string{"."}
		return p, true
	default:
		return p, false
	}
	if i >= len(words) || words[i] != "install" {
		return p, false
	}
	args := words[i+1:]
	for j := 0; j < len(args); j++ {
		a := args[j]
		next := func() string {
			if j+1 < len(args) {
				j++
				return args[j]
			}
			return ""
		}
		name, val, hasVal := strings.Cut(a, "=")
		switch {
		case a == "-e" || a == "--editable":
			p.addTarget(next())
		case name == "--editable" && hasVal:
			p.addTarget(val)
		case strings.HasPrefix(a, "-e") && len(a) > 2 && a[1] != '-':
			p.addTarget(a[2:]) // -e. as pip reads it: -e .
		case a == "-r" || a == "--requirement":
			p.readRequirements(filepath.Join(dir, next()), dir)
		case strings.HasPrefix(a, "-r") && len(a) > 2:
			p.readRequirements(filepath.Join(dir, a[2:]), dir)
		case name == "--requirement" && hasVal:
			p.readRequirements(filepath.Join(dir, val), dir)
		case a == "--group":
			p.addGroup(dir, next())
		case name == "--group" && hasVal:
			p.addGroup(dir, val)
		case a == "-c" || a == "--constraint" || a == "-i" || a == "--index-url" || a == "--extra-index-url" ||
			a == "-f" || a == "--find-links" || a == "--upgrade-strategy" || a == "--progress-bar" ||
			a == "--only-binary" || a == "--no-binary" || a == "--target" || a == "-t" || a == "--prefix" || a == "--root":
			p.dropped = append(p.dropped, a, next())
		case strings.HasPrefix(a, "-"):
			p.dropped = append(p.dropped, a) // -U, --user, -q, --pre, ...
		default:
			p.addTarget(a)
		}
	}
	return p, true
}

// addGroup adds the requirements of a PEP 735 dependency group, pip's
// --group [PATH:]NAME (pip 25.1; pydicom's CI installs its tests' through
// it): PATH is a pyproject.toml, the one in dir when absent. A requirement
// on the project itself adds its extras to the project's editable install
// rather than fetching the project from the index.
func (p *pipPlan) addGroup(dir, spec string) {
	file, name := "pyproject.toml", spec
	if i := strings.LastIndexByte(spec, ':'); i >= 0 {
		file, name = spec[:i], spec[i+1:]
	}
	proj := filepath.Dir(filepath.Join(dir, file))
	own := env.RequirementName(readPyproject(proj).Project.Name)
	for _, r := range dependencyGroup(proj, name, 0) {
		if own == "" || env.RequirementName(r) != own {
			p.addTarget(r)
			continue
		}
		rel, err := filepath.Rel(dir, proj)
		if err != nil || rel == "." {
			rel = "."
		} else {
			rel = "./" + filepath.ToSlash(rel)
		}
		if _, extras, ok := strings.Cut(r, "["); ok {
			p.addTarget(rel + "[" + strings.TrimSpace(strings.SplitN(extras, "]", 2)[0]) + "]")
		} else if !containsWord(p.editable, rel) {
			p.addTarget(rel)
		}
	}
}

func isPythonName(b string) bool {
	return b == "python" || strings.HasPrefix(b, "python3") || strings.HasPrefix(b, "python2")
}

// addTarget classifies one pip target: a local path (installed editable) or
// a requirement (kept unless it is tooling).
func (p *pipPlan) addTarget(t string) {
	if t == "" {
		return
	}
	base, extras, _ := strings.Cut(t, "[")
	if base == "." || strings.HasPrefix(base, "./") || strings.HasPrefix(base, "../") || strings.HasPrefix(base, "/") || base == "" {
		var add []string
		if extras != "" {
			for _, e := range strings.Split(strings.TrimSuffix(extras, "]"), ",") {
				add = append(add, strings.TrimSpace(e))
			}
		}
		p.extras = append(p.extras, add...)
		// One path named twice (a group's "pkg[io]" and the line's ".")
		// is one install with both's extras: pip refuses a double
		// requirement.
		for i, have := range p.editable {
			hb, hx, _ := strings.Cut(have, "[")
			if hb != base {
				continue
			}
			all := strings.Split(strings.TrimSuffix(hx, "]"), ",")
			if hx == "" {
				all = nil
			}
			for _, e := range add {
				if !containsWord(all, e) {
					all = append(all, e)
				}
			}
			if len(all) > 0 {
				p.editable[i] = hb + "[" + strings.Join(all, ",") + "]"
			}
			return
		}
		p.editable = append(p.editable, t)
		return
	}
	if isTooling(env.RequirementName(t)) {
		p.dropped = append(p.dropped, t)
		return
	}
	p.reqs = append(p.reqs, t)
}

// keepTooling puts back the requirements that add dropped as tooling and
// keep says are the step's to install: a tox environment's deps that name
// setuptools or wheel (lxml's make test runs setup.py), a package the
// repository's pytest configuration imports (pytestImports).
func (p *pipPlan) keepTooling(keep func(name string) bool) {
	var rest []string
	for _, d := range p.dropped {
		if !strings.HasPrefix(d, "-") && keep(env.RequirementName(d)) {
			p.reqs = append(p.reqs, d)
		} else {
			rest = append(rest, d)
		}
	}
	p.dropped = rest
}

// isToxDeps says whether a step installs a tox environment's deps.
func isToxDeps(st *env.Step) bool {
	return strings.HasSuffix(st.Provenance, "] deps") && strings.Contains(st.Provenance, "tox")
}

// readRequirements adds a requirements file's requirements, following -r
// includes (relative to the including file) and treating -e paths as
// project installs (relative to where pip runs, as pip does).
func (p *pipPlan) readRequirements(file, cwd string) {
	data, err := os.ReadFile(file)
	if err != nil {
		p.dropped = append(p.dropped, "-r "+file+" (unreadable)")
		return
	}
	for _, line := range strings.Split(string(data), "\n") {
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		switch {
		case f[0] == "-r" || f[0] == "--requirement":
			if len(f) > 1 {
				p.readRequirements(filepath.Join(filepath.Dir(file), f[1]), cwd)
			}
		case strings.HasPrefix(f[0], "-r") && len(f[0]) > 2:
			p.readRequirements(filepath.Join(filepath.Dir(file), f[0][2:]), cwd)
		case f[0] == "-e" || f[0] == "--editable":
			if len(f) > 1 {
				p.addTarget(f[1])
			}
		case strings.HasPrefix(f[0], "-"):
			// index options, constraints, hashes: meaningless offline
		default:
			// Per-requirement options (--hash=...) follow the specifier.
			if i := strings.Index(line, " --"); i >= 0 {
				line = strings.TrimSpace(line[:i])
			}
			p.addTarget(line)
		}
	}
}

// pipMissing matches pip's message for a requirement it cannot find.
var pipMissing = lazyre.New(`(?:No matching distribution found for|Could not find a version that satisfies the requirement) ([^\s;]+)`)

// backendMissing matches a build backend that is not installed (builds run
// without isolation, so the backend must be there).
var backendMissing = lazyre.New(`Cannot import '([A-Za-z0-9_.]+)'|No module named '([A-Za-z0-9_.]+)'`)

// command renders the plan as the pip command cwm runs, after pip's own
// words (pipWords).
func (p pipPlan) command(pip []string) string {
	words := append([]string(nil), pip...)
	if p.noDeps {
		words = append(words, "--no-deps")
	}
	words = append(words, p.compat.words()...)
	for _, e := range p.editable {
		words = append(words, "-e", e)
	}
	words = append(words, p.reqs...)
	return testrun.Join(words)
}

// runPip runs a pip install offline. A requirement pip cannot find is
// recorded as missing and the install retried without it (for the
// project's own dependencies: with --no-deps, and the dependency check
// after installation names the rest), so one missing package does not
// stop everything else from being installed.
func (in *installer) runPip(ctx context.Context, st *env.Step, p pipPlan, dir string, vars []string) error {
	in.extras = append(in.extras, p.extras...)
	in.reqs = append(in.reqs, p.reqs...)
	if len(p.editable) == 0 && len(p.reqs) == 0 {
		st.Status, st.Note = "skipped", "installs only tooling ("+strings.Join(p.dropped, " ")+")"
		fmt.Fprintf(in.log, "\n$ %s\n(skipped: %s)\n", st.Command, st.Note)
		return nil
	}
	partial := false
	var compatVars []string
	if in.mode != env.ModeOffline && len(p.editable) > 0 && p.compat == compatNone {
		if p.compat = in.editableMode(p.editable, dir); p.compat != compatNone {
			var err error
			if compatVars, err = in.prepareCompat(ctx, p.compat, p.editable, dir); err != nil {
				return err
			}
		}
	}
	for attempt := 0; attempt < 50; attempt++ {
		report := ""
		if in.mode != env.ModeOffline {
			in.reports++
			report = fmt.Sprintf("/tmp/cwm-pip-report-%d.json", in.reports)
		}
		line := p.command(in.pipWords(report))
		if all := slices.Concat(vars, compatVars); len(all) > 0 {
			line = strings.Join(all, " ") + " " + line
		}
		st.Run = line
		if dir != "" {
			st.Run = "cd " + testrun.Join([]string{dir}) + " && " + line
		}
		res, err := in.exec(ctx, line, dir)
		if err != nil {
			return err
		}
		if res.Success() {
			st.Status = "ok"
			if partial {
				st.Status, st.Note = "partial", "installed without the missing requirements"
			}
			if p.compat != compatNone {
				st.Note = joinNote(st.Note, p.compat.note())
			}
			return in.readReport(ctx, report)
		}
		out := string(res.Stdout) + "\n" + string(res.Stderr)
		if next := p.compat.next(out, in.legacyBuild(p.editable, dir)); next != compatNone && len(p.editable) > 0 && in.mode != env.ModeOffline {
			p.compat = next
			if compatVars, err = in.prepareCompat(ctx, next, p.editable, dir); err != nil {
				return err
			}
			continue
		}
		m := pipMissing().FindStringSubmatch(out)
		if m == nil {
			cause := firstError(out)
			if b := backendMissing().FindStringSubmatch(out); b != nil && len(p.editable) > 0 {
				mod := b[1] + b[2]
				in.addMissing(env.Missing{Import: topModule(mod), Source: "build backend"})
				cause = "the build backend " + mod + " is not installed"
			}
			if len(p.editable) > 0 && in.mode == env.ModeOffline {
				// The build step itself failed (an old or absent backend,
				// metadata it cannot read): the sources can still be
				// imported from where they are.
				return in.importRootFallback(ctx, st, p, dir, vars, cause)
			}
			st.Status, st.Note = "failed", res.Describe()+": "+cause+"; "+in.failHint(out)
			return nil
		}
		name := env.RequirementName(m[1])
		in.addMissing(env.Missing{Requirement: m[1], Source: "pip"})
		partial = true
		if i := indexReq(p.reqs, name); i >= 0 {
			p.reqs = append(p.reqs[:i:i], p.reqs[i+1:]...)
		} else if len(p.editable) > 0 && !p.noDeps {
			p.noDeps = true
		} else {
			st.Status, st.Note = "failed", "cannot install without "+m[1]
			return nil
		}
		if len(p.editable) == 0 && len(p.reqs) == 0 {
			st.Status, st.Note = "partial", "every requirement is missing"
			return nil
		}
	}
	st.Status, st.Note = "failed", "too many missing requirements"
	return nil
}

func indexReq(reqs []string, name string) int {
	for i, r := range reqs {
		if env.RequirementName(r) == name {
			return i
		}
	}
	return -1
}

func (in *installer) addMissing(m env.Missing) {
	for _, have := range in.missing {
		if (m.Requirement != "" && env.RequirementName(have.Requirement) == env.RequirementName(m.Requirement)) ||
			(m.Import != "" && have.Import == m.Import) {
			return
		}
	}
	in.missing = append(in.missing, m)
}

func topModule(mod string) string {
	top, _, _ := strings.Cut(mod, ".")
	return top
}

func roundSeconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}
