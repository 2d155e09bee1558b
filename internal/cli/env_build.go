package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/envbuild"
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
install and test it, installs it offline into /venv inside a sandbox, runs
the test suite --runs times, records every test's outcome (flaky when runs
disagree) and which functions each passing test executes.

Recipe detection, first hit per step: --install/--test; the Python job of
.github/workflows/*.yml (expressions evaluated, the matrix collapsed to the
Linux entry with the sandbox's Python, uv/uvx/pipx/poetry/pdm commands
unwrapped); tox (tox.ini, tox.toml, pyproject's [tool.tox]; the environment
-e names) or noxfile.py; pyproject.toml, setup.cfg, setup.py and
requirements*.txt; a Makefile test target; then python -m pytest, then
python -m unittest discover. A source whose program the sandbox lacks is
passed over for the next. pip installs run with --no-index and
--no-build-isolation; an editable install whose build step fails puts the
import root (src/ or the project) on the venv's path instead; a dependency
that is not installed on the host is reported with the Debian package that
provides it.

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
	fs.StringVar(&c.base, "base", "", "root filesystem `DIR` to build on instead of the host's /usr and /etc")
	fs.BoolVar(&c.json, "json", false, "print the manifest (env.json) instead of the id")
	fs.BoolVar(&c.online, "online", false, "let pip use its package index (needs a base whose pip reaches one from inside the sandbox)")
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
	sbs, closeRT, err := openSandboxes(e, -1)
	if err != nil {
		return err
	}
	defer closeRT()
	progress := progressTo(e, c.quiet)
	if _, err := c.agent.wanted(&env.Env{Usable: true}, false); err != nil {
		return err // flags checked before anything is built
	}
	opts := envbuild.Options{
		Home: e.Home, Source: args[0], Rev: c.rev, Name: c.envName, Install: c.install, Test: c.test,
		Runs: c.runs, Base: c.base, Online: c.online, Force: c.force, NoCoverage: c.noCoverage,
		InstallTimeout: c.installTimeout,
		Limits:         env.RunLimits{Timeout: c.timeout, Memory: int64(c.memory), Disk: int64(c.disk)},
		Progress:       progress, Log: e.Log,
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
