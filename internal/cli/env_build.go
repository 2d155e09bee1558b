package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"cwm/internal/command"
	"cwm/internal/egress"
	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/errkind"
)

type envBuildCmd struct {
	rev            string
	envName        string
	install        command.StringList
	test           string
	runs           int
	base           string
	json           bool
	online         bool
	offline        bool
	python         string
	portable       bool
	systemPackages bool
	excludeNewer   string
	locked         string
	wheelhouse     string
	allowHosts     command.StringList
	force          bool
	noCoverage     bool
	quiet          bool
	timeout        time.Duration
	installTimeout time.Duration
	memory         command.ByteSize
	disk           command.ByteSize
	agent          setupAgentFlags
	history, keep  int
}

func (*envBuildCmd) Name() string { return "env build" }
func (*envBuildCmd) Synopsis() string {
	return "turn a repository into an executable environment"
}
func (*envBuildCmd) Usage() string {
	return `[flags] PATH|GIT-URL
Copies the repository at --rev (a git repository as a shallow one: the
revision back to its nearest version tag, the history staying with the
source; a plain directory becomes a one-commit repository whose
revision is the hash of its tree) into a new layer at /repo, finds how to
install and test it, installs it into /venv inside a sandbox, runs the test
suite --runs times, records every test's outcome (flaky when runs disagree)
and which functions each passing test executes.

Installing is online by default (--online says so): the repository's own
dependencies come from the package index the host's pip is configured
with, through cwm's egress relay during install steps only, into a venv
of its own, with PEP 517 builds in isolation and resolution bounded by
the commit's date plus 7 days (--exclude-newer DATE, or none); the
resolved set (names, versions, sources, sha256) is the manifest's lock.
The Python is --python X.Y, or the one the project asks for
(requires-python, classifiers, the CI matrix, tox's envlist): the host's
when it fits and --portable is not given, else a stored base's. --locked
ENV|FILE reinstalls exactly a lock (an environment's, or a requirements
file with hashes as cwm env lock prints it), hashes required: when the
wheel cache holds every file, the wheels (unpacked once, checked against
their RECORD) and the project's cached editable install are linked into
the venv instead of installed by pip (else pip installs them). --wheelhouse
DIR installs from staged wheels with no index and no network. No bytecode
is compiled at install: Python compiles a module on first import.
Where the CI installs with uv (uv sync, uv pip install, the sync uv run
performs), an online build runs those steps with a pinned uv fetched from
the index through the relay (kept in cwm's wheel cache): the venv is uv's
project environment and Python, the date bound is uv's exclude-newer, and
uv sync takes --frozen where the project has uv.lock. --offline and
--wheelhouse builds, and an online one that cannot fetch uv (its step's
note says why), translate them to pip.

Recipe detection, first hit per step: --install/--test; the Python job of
.github/workflows/*.yml (expressions evaluated, the matrix collapsed to the
Linux entry with the sandbox's Python, uvx/pipx/poetry/pdm commands
unwrapped, uv run's command run with the venv's Python); tox (tox.ini, tox.toml, pyproject's [tool.tox]; the environment
-e names) or noxfile.py; pyproject.toml, setup.cfg, setup.py and
requirements*.txt; a Makefile test target; then python -m pytest, then
python -m unittest discover. A source whose program the sandbox lacks is
passed over for the next. With --offline, pip installs run with
--no-index and --no-build-isolation on the base's packages; an editable
install whose build step fails puts the import root (src/ or the project)
on the venv's path instead; a dependency that is not installed on the host
is reported with the Debian package that provides it.

With --model and --base-url, a setup agent (CWM's RepoAgent, on the
forage machinery) sets the repository up when the detected recipe gives no
usable environment (with --agent: always): in a sandbox on the repository
it reads files and runs commands, then submits the install steps and test
command it proposes; cwm builds with them (provenance "agent") and keeps
that environment only when its baseline has passing tests. Its trajectory
is appended to --trajectories (forage's schema, task id setup/NAME).

--history N builds, after the environment at --rev, older commits of its
first-parent history (N tries, --rev included) as CWM traced repositories
at several points in time: at most --keep usable environments spread evenly
over the history, each commit with --rev's recipe and, when that is not
usable, its own detected one; every commit's outcome is printed (--json:
{"env": MANIFEST, "history": [...]}).

Prints the environment's id (the whole manifest with --json). An
environment where no test passes in every run is kept, marked unusable,
and the command exits 1 with the reason. See docs/environments.md.

Examples:
  cwm env build examples/textkit
  cwm env build --rev v1.2.0 --name mylib https://example.org/mylib.git
  cwm env build --install 'pip install -e .' --test 'pytest -q tests' ./repo`
}

func (c *envBuildCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.rev, "rev", "", "`REVISION` of a git repository (default HEAD)")
	fs.StringVar(&c.envName, "name", "", "`NAME` to refer to the environment by (default: the directory's name)")
	fs.Var(&c.install, "install", "install `CMD` instead of the detected ones (repeatable, run in order)")
	fs.StringVar(&c.test, "test", "", "test `CMD` instead of the detected one")
	fs.IntVar(&c.runs, "runs", 3, "how many times the baseline runs the suite")
	fs.StringVar(&c.base, "base", "", "build on this `BASE`: a stored base's digest or prefix (cwm base ls), or a root filesystem directory (imported into the base store first), instead of the host's /usr and /etc")
	fs.BoolVar(&c.json, "json", false, "print the manifest (env.json) instead of the id")
	fs.BoolVar(&c.online, "online", false, "install from the package index through the egress relay (the default)")
	fs.BoolVar(&c.offline, "offline", false, "install with the base's packages only: no index, no build isolation, the import-root fallback")
	fs.StringVar(&c.python, "python", "", "build on Python `X.Y` (default: what the project asks for)")
	fs.BoolVar(&c.portable, "portable", false, "build on a stored base even when the host's Python fits")
	fs.BoolVar(&c.systemPackages, "system-packages", true, "when an install step of an online build on a Debian base fails for a system library's development files (libxml2, GEOS, libjpeg...), build a base with the Debian packages that provide them, derived from the chosen one, and build again on it (false: keep the failure, whose note names the packages)")
	fs.StringVar(&c.excludeNewer, "exclude-newer", "", "resolve with releases uploaded before `DATE` (default: the commit's date plus 7 days; none: no bound)")
	fs.StringVar(&c.locked, "locked", "", "reinstall exactly the lock of environment `ENV|FILE` (or a requirements file with hashes)")
	fs.StringVar(&c.wheelhouse, "wheelhouse", "", "install from the wheels in `DIR`, with no index and no network")
	fs.Var(&c.allowHosts, "allow-host", "let install steps reach `HOST` too (NAME, NAME:PORT, *.SUFFIX or IP:PORT; repeatable) besides the host's index")
	fs.BoolVar(&c.force, "force", false, "rebuild even when a usable environment with the same id exists")
	fs.BoolVar(&c.noCoverage, "no-coverage", false, "skip the test-to-code map (env coverage computes it on first use)")
	fs.BoolVar(&c.quiet, "quiet", false, "print no progress")
	fs.DurationVar(&c.timeout, "timeout", 15*time.Minute, "wall-clock limit of one test run")
	fs.DurationVar(&c.installTimeout, "install-timeout", 10*time.Minute, "wall-clock limit of one install step")
	c.memory = 4 << 30
	fs.Var(&c.memory, "memory", "memory limit of each sandbox in `BYTES` (suffixes K, M, G)")
	c.disk = 4 << 30
	fs.Var(&c.disk, "disk", "`BYTES` each sandbox may write, the install's included (counted against --memory too)")
	c.agent.register(fs)
	fs.IntVar(&c.history, "history", 0, "also build up to `N` commits of the first-parent history back from --rev (CWM: 40)")
	fs.IntVar(&c.keep, "keep", 4, "with --history: keep at most `K` usable environments, spread over the history")
}

func (c *envBuildCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) != 1 {
		return command.Usagef("want one repository (a path or a git URL), got %d arguments", len(args))
	}
	if c.runs < 1 || c.runs > 100 {
		return command.Usagef("--runs %d: want 1 to 100", c.runs)
	}
	if c.history < 0 || c.keep < 1 {
		return command.Usagef("--history must be 0 or more and --keep at least 1")
	}
	if c.timeout <= 0 || c.installTimeout <= 0 {
		return command.Usagef("--timeout and --install-timeout must be positive")
	}
	mode := env.ModeOnline
	switch {
	case c.offline && (c.online || c.wheelhouse != "" || c.locked != "" || c.excludeNewer != ""):
		return command.Usagef("--offline installs the base's packages: it takes no --online, --wheelhouse, --locked or --exclude-newer")
	case c.offline:
		mode = env.ModeOffline
	case c.wheelhouse != "":
		mode = env.ModeWheelhouse
	}
	lock, err := c.readLock(e)
	if err != nil {
		return err
	}
	var policy *egress.Policy
	if mode == env.ModeOnline {
		if policy, err = c.policy(ctx); err != nil {
			return err
		}
	} else if len(c.allowHosts) > 0 {
		return command.Usagef("--allow-host is for online builds: --offline and --wheelhouse builds have no network")
	}
	sbs, closeRT, err := openSandboxes(e, -1)
	if err != nil {
		return err
	}
	defer closeRT()
	progress := progressTo(e, c.quiet)
	if _, err := c.agent.wanted(&env.Env{Usable: true}, false); err != nil {
		return err // flags checked before anything is built
	}
	baseArg, bases, err := buildBases(ctx, e, c.base)
	if err != nil {
		return err
	}
	opts := envbuild.Options{
		Home: e.Home, Source: args[0], Rev: c.rev, Name: c.envName, Install: c.install, Test: c.test,
		Runs: c.runs, Base: baseArg, Bases: bases, Mode: mode, Force: c.force, NoCoverage: c.noCoverage,
		Python: c.python, Portable: c.portable, ExcludeNewer: c.excludeNewer, Lock: lock, Wheelhouse: c.wheelhouse,
		Egress:         policy,
		InstallTimeout: c.installTimeout,
		Limits:         env.RunLimits{Timeout: c.timeout, Memory: int64(c.memory), Disk: int64(c.disk)},
		Progress:       progress, Log: e.Log,
	}
	if c.systemPackages && mode == env.ModeOnline {
		opts.DeriveBase = deriveBase(e)
	}
	built, err := envbuild.Build(ctx, sbs, opts)
	if err != nil {
		return err
	}
	if run, err := c.agent.wanted(built, len(c.install) > 0 || c.test != ""); err != nil {
		return err
	} else if run {
		if built, err = c.agent.run(ctx, e, sbs, built, opts); err != nil {
			return err
		}
	}
	var history []envbuild.HistoryOutcome
	if c.history > 0 {
		if history, err = envbuild.BuildHistory(ctx, sbs, built, opts, c.history, c.keep); err != nil {
			return err
		}
		kept := 0
		for _, o := range history {
			state := "unusable: " + o.Reason
			switch {
			case o.Error != "":
				state = "failed: " + o.Error
			case o.Usable:
				state, kept = "usable ("+o.Recipe+" recipe) "+o.EnvID, kept+1
			}
			fmt.Fprintf(e.Stderr, "history %2d  %s  %s\n", o.Index, shortID(o.Commit), state)
		}
		fmt.Fprintf(e.Stderr, "history: %d of %d commits tried, %d usable environments kept\n", len(history), c.history, kept)
	}
	switch {
	case c.json && c.history > 0:
		if err := writeJSON(e.Stdout, map[string]any{"env": manifestJSON(built), "history": history}); err != nil {
			return err
		}
	case c.json:
		if err := writeJSON(e.Stdout, manifestJSON(built)); err != nil {
			return err
		}
	default:
		fmt.Fprintln(e.Stdout, built.ID)
	}
	if !built.Usable {
		var debs, old []string
		for _, m := range built.Missing {
			// A package already installed in a version that does not
			// satisfy the requirement (flit_core>=4 against Debian's
			// 3.8) is not helped by installing it.
			switch {
			case m.Installed != "":
				need := m.Requirement
				if need == "" {
					need = m.Import
				}
				old = append(old, fmt.Sprintf("installed %s %s, needs %s", m.Import, m.Installed, need))
			case m.Debian != "":
				debs = append(debs, m.Debian)
			}
		}
		if len(debs) > 0 {
			fmt.Fprintf(e.Stderr, "hint: install the missing dependencies on the host (apt-get install %s) and build again\n", strings.Join(debs, " "))
		}
		if len(old) > 0 {
			fmt.Fprintf(e.Stderr, "hint: too old here, and not helped by installing: %s\n", strings.Join(old, "; "))
		}
		return fmt.Errorf("environment %s is not usable: %s (log: %s)", built.ID, built.Reason, built.BuildLog)
	}
	return nil
}

// readLock reads --locked: a file (a requirements file with hashes, as
// cwm env lock prints it) when one is there, otherwise an environment of
// the store, whose manifest holds its lock.
func (c *envBuildCmd) readLock(e *command.Env) ([]env.LockedPackage, error) {
	if c.locked == "" {
		return nil, nil
	}
	if st, err := os.Stat(c.locked); err == nil && st.Mode().IsRegular() {
		return envbuild.ReadLock(c.locked)
	}
	en, err := env.NewStore(e.Home).Resolve(c.locked)
	if err != nil {
		return nil, fmt.Errorf("--locked %s: %w", c.locked, err)
	}
	if len(en.Lock) == 0 {
		return nil, errkind.Errorf(errkind.Input, "--locked %s: environment %s has no lock (only online and --wheelhouse builds have one)", c.locked, en.ID)
	}
	return en.Lock, nil
}

// policy is the egress relay's allowlist of an online build: the index the
// host's pip is configured with (egress.DefaultPolicy) and --allow-host.
func (c *envBuildCmd) policy(ctx context.Context) (*egress.Policy, error) {
	return egressPolicy(ctx, c.allowHosts)
}

// egressPolicy is the allowlist of the host's index (and Debian mirror)
// and allowHosts, what env build's install steps and a Harbor task's
// Dockerfile RUN steps reach.
func egressPolicy(ctx context.Context, allowHosts []string) (*egress.Policy, error) {
	var hosts []egress.Host
	for _, a := range allowHosts {
		h, err := egress.ParseAllowHost(a)
		if err != nil {
			return nil, err
		}
		hosts = append(hosts, h)
	}
	p, err := egress.DefaultPolicy(ctx)
	if err != nil {
		return nil, fmt.Errorf("find the package index the host's pip uses: %w", err)
	}
	p.Allow(hosts...)
	return &p, nil
}
