// Package envbuild turns a repository into an environment (cwm/internal/env):
// a read-only layer holding the repository at one revision (/repo, with
// its git history up to that revision) and what its installation produced
// (/venv), plus a manifest (env.json) that records how it was installed
// and tested and the outcome of every test in several baseline runs.
//
// Building finds the recipe (flags, CI workflows, tox or nox, project
// metadata, a Makefile, then defaults), chooses the Python the project
// needs, installs in a sandbox (from the package index through the egress
// relay, from a wheelhouse, or offline with the base's packages), runs
// the suite --runs times in fresh sandboxes, marks tests whose
// outcome changes as flaky, and records which functions each passing test
// executes (the test-to-code map the tasks stage mutates). Environments
// are content addressed: the id hashes the repository tree, the recipe,
// the base and how resolution is bounded, so building the same thing twice
// gives the same id. A build happens in a stage of the store (env.Stage)
// published at the end, so an interrupted build never looks like an
// environment. See
// docs/environments.md.
package envbuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"cwm/internal/egress"
	"cwm/internal/env"
	"cwm/internal/progress"
	"cwm/internal/sandbox"
	"cwm/internal/testrun"
)

// Options describe a build.
type Options struct {
	// Home is $CWM_HOME; environments go to Home/envs.
	Home string
	// Source is a directory or a git URL; Rev a revision of a git source
	// (default HEAD).
	Source, Rev string
	// Name is a short name to refer to the environment by (default: the
	// source's base name).
	Name string
	// Install and Test override recipe detection.
	Install []string
	Test    string
	// RecipeFrom, when set, is the provenance of Install and Test
	// ("agent" for a setup agent's recipe) instead of the flags'.
	RecipeFrom string
	// Runs is how many times the baseline runs the suite (default 3).
	Runs int
	// Base is a root filesystem to build on instead of the host's.
	Base string
	// Mode is how dependencies are installed: env.ModeOnline (from the
	// index, through the egress relay), env.ModeWheelhouse (from
	// Wheelhouse, no network) or env.ModeOffline; "" is offline, what
	// library callers had before modes (the command line's default is
	// online).
	Mode string
	// Wheelhouse is a directory of staged wheels (ModeWheelhouse).
	Wheelhouse string
	// Python is --python X.Y; Portable refuses the host's Python; Bases
	// are the stored bases a build may run on (online and wheelhouse
	// builds without Base).
	Python   string
	Portable bool
	Bases    []BasePython
	// DeriveBase, when set, gives an online build a base with more Debian
	// packages: where an install step fails for a system library's
	// development files (systemNeed), the build asks it for a base like
	// the one chosen (from) with packages added, and builds again on that
	// one. nil keeps the failure, whose note names the packages.
	DeriveBase func(ctx context.Context, from BasePython, packages []string) (*BasePython, error)
	// derived says, for the provenance, why a build runs on a base that
	// DeriveBase gave; derivations counts them (at most maxDerivations).
	derived     string
	derivations int
	// onBase is the stored base the build chose (nil for the host or
	// --base), for DeriveBase.
	onBase *BasePython
	// ExcludeNewer bounds online resolution: a date or RFC 3339 time,
	// "none", or "" for the commit's date plus GraceAfterCommit.
	ExcludeNewer string
	// Lock, when set, is reinstalled exactly (--locked): its packages with
	// hashes required, then the local project without dependencies.
	Lock []env.LockedPackage
	// PipWheel is the pip wheel online and wheelhouse builds run (default:
	// EnsurePip's).
	PipWheel string
	// Egress, when set, gives each install step of an online build a
	// relay to the network with this policy (see internal/egress:
	// typically egress.DefaultPolicy plus --allow-host), and pip that
	// policy's index; nil keeps install steps offline. Tests, traces,
	// tasks and episodes never get one.
	Egress *egress.Policy
	// Force rebuilds even when a usable environment with the id exists.
	Force bool
	// NoCoverage skips the test-to-code map (computed later on demand).
	NoCoverage bool
	// InstallTimeout bounds each install step (default 10 minutes).
	InstallTimeout time.Duration
	// Limits bound each test run (timeout default 15 minutes).
	Limits env.RunLimits
	// Progress receives a line per step for people; nil for none.
	Progress io.Writer
	Log      *slog.Logger
}

// Build builds (or finds, when already built) the environment for opts in
// the store under opts.Home, with sandboxes of sbs. An environment whose
// tests never pass is still stored, with Usable false and the Reason; the
// error is for failures of the build itself and for bad input (of kind
// errkind.Input).
func Build(ctx context.Context, sbs *env.Sandboxes, opts Options) (*env.Env, error) {
	start := time.Now()
	if opts.Runs <= 0 {
		opts.Runs = 3
	}
	if opts.InstallTimeout <= 0 {
		opts.InstallTimeout = 10 * time.Minute
	}
	if opts.Limits.Timeout <= 0 {
		opts.Limits.Timeout = 15 * time.Minute
	}
	say := opts.Progress
	if say == nil {
		say = io.Discard
	}
	src, err := ResolveSource(ctx, opts.Source)
	if err != nil {
		return nil, err
	}
	mode := opts.Mode
	if mode == "" {
		mode = env.ModeOffline
	}
	if opts.Wheelhouse != "" {
		mode = env.ModeWheelhouse
		abs, err := filepath.Abs(opts.Wheelhouse)
		if st, serr := os.Stat(abs); err != nil || serr != nil || !st.IsDir() {
			return nil, inputErrorf("--wheelhouse %s: no such directory", opts.Wheelhouse)
		}
		opts.Wheelhouse = abs
	}
	if mode == env.ModeOffline && len(opts.Lock) > 0 {
		return nil, inputErrorf("--locked needs an online or --wheelhouse build: offline builds install the base's packages")
	}
	if opts.Python != "" && !isMajorMinor(opts.Python) {
		return nil, inputErrorf("--python %s: want a version X.Y (3.11)", opts.Python)
	}
	base := "host"
	if env.IsBaseDigest(opts.Base) {
		base = opts.Base // a stored base, resolved by the caller
	} else if opts.Base != "" {
		abs, err := filepath.Abs(opts.Base)
		if err != nil {
			return nil, inputErrorf("--base %s: %v", opts.Base, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return nil, inputErrorf("--base %s: no such directory", opts.Base)
		}
		base = abs
	}
	if opts.Test != "" {
		if _, err := testrun.Parse(opts.Test); err != nil {
			return nil, inputErrorf("--test: %v", err)
		}
	}
	store := env.NewStore(opts.Home)
	stg, err := store.NewStage()
	if err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done {
			stg.Discard()
		}
	}()
	lf, err := os.Create(filepath.Join(stg.Dir(), env.BuildLog))
	if err != nil {
		return nil, err
	}
	logf := newCappedLog(lf)
	defer logf.Close()
	ph := newPhases()

	layer := stg.LayerDir()
	repo := filepath.Join(layer, "repo")
	scratch := filepath.Join(stg.Dir(), "scratch")
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return nil, err
	}
	info, err := fetchSource(ctx, src, opts.Rev, repo, scratch)
	if err != nil {
		return nil, err
	}
	sandbox.RemoveAll(scratch)
	if err := addGitExcludes(repo); err != nil {
		return nil, fmt.Errorf("configure the layer's repository: %w", err)
	}
	ph.done("source")
	name := opts.Name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(strings.TrimRight(src.Location, "/")), ".git")
	}
	fmt.Fprintf(say, "env build: %s (%s %s at %s)\n", name, src.Kind, src.Location, short(info.Revision))
	if info.Note != "" {
		fmt.Fprintf(say, "source: %s\n", info.Note)
		fmt.Fprintf(logf, "source: %s\n", info.Note)
	}

	// The environment as built so far: its layer over the base.
	e := stg.Env()
	var lockCached map[string]string // the lock's files the wheel cache holds, by sha256
	e.Mode = mode
	if mode != env.ModeOffline {
		if e.ExcludeNewer, err = excludeNewer(opts.ExcludeNewer, info.Date); err != nil {
			return nil, err
		}
		if mode == env.ModeWheelhouse {
			e.ExcludeNewer = "" // local files carry no upload time
		}
		if opts.Base == "" {
			choice, err := choosePython(detectPythonNeed(repo), opts.Python, hostPython(ctx), opts.Portable, opts.Bases, e.ExcludeNewer)
			if err != nil {
				return nil, err
			}
			if choice.Base != nil {
				base = choice.Base.Root
				opts.onBase = choice.Base
			}
			if opts.derived != "" {
				choice.Prov.Note = strings.TrimPrefix(choice.Prov.Note+"; "+opts.derived, "; ")
			}
			e.PythonFrom = &choice.Prov
			fmt.Fprintf(say, "python: %s (%s)\n", choice.Prov.Base, describeChoice(choice.Prov))
		}
		pipWheel := opts.PipWheel
		if pipWheel == "" {
			if pipWheel, err = EnsurePip(ctx, opts.Home, opts.Wheelhouse); err != nil {
				return nil, err
			}
		}
		var cached []string
		if mode == env.ModeOnline {
			// Hashed once: the staging, the linking and the locked steps
			// take it from here.
			lockCached = cachedWheels(opts.Home, opts.Lock)
			for _, f := range lockCached {
				cached = append(cached, f)
			}
		}
		caBundle := ""
		if opts.Egress != nil && mode == env.ModeOnline {
			caBundle = opts.Egress.CABundle
		}
		if err := stageTools(ctx, layer, pipWheel, opts.Wheelhouse, caBundle, cached); err != nil {
			return nil, err
		}
		if mode == env.ModeOnline {
			if err := stageUV(layer, opts.Home); err != nil {
				return nil, err
			}
		}
		ph.done("tools")
	}
	e.Base = base
	limits := env.RunLimits{Timeout: opts.InstallTimeout, Memory: opts.Limits.Memory, Pids: opts.Limits.Pids, Disk: opts.Limits.Disk}
	isb, err := sbs.OpenWith(ctx, e, limits)
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	defer func() { isb.Close() }()
	python, err := pythonVersion(ctx, isb, "python3")
	if err != nil {
		return nil, err
	}
	recipe, err := detectRecipe(repo, opts.Install, opts.Test, majorMinor(python), programFinder(ctx, isb))
	if err != nil {
		return nil, err
	}
	if opts.RecipeFrom != "" {
		for i := range recipe.Install {
			if recipe.Install[i].Provenance == flagInstallProv {
				recipe.Install[i].Provenance = opts.RecipeFrom
			}
		}
		if recipe.Test.Provenance == flagTestProv {
			recipe.Test.Provenance = opts.RecipeFrom
		}
	}
	tc, err := testrun.Parse(recipe.Test.Command)
	if err != nil {
		return nil, fmt.Errorf("test command %q from %s: %w", recipe.Test.Command, recipe.Test.Provenance, err)
	}
	if len(opts.Lock) > 0 {
		recipe.Install = lockSteps(opts.Lock)
		e.Locked = true
	}
	if opts.Python != "" && (opts.Base != "" || mode == env.ModeOffline) && majorMinor(python) != opts.Python {
		return nil, inputErrorf("--python %s: the base has Python %s", opts.Python, python)
	}
	inputs := idInputs{commit: info.Commit, tree: info.Tree, base: base, python: python, mode: mode,
		excludeNewer: e.ExcludeNewer, lock: opts.Lock}
	id := envID(inputs, recipe)
	if old := store.Get(id); old != nil && old.Usable && !opts.Force {
		fmt.Fprintf(say, "already built: %s\n", id)
		if len(old.Missing) > 0 {
			// The id does not cover what the host has installed since.
			fmt.Fprintf(say, "it was built with %d missing dependencies; --force builds it again with what the base has now\n", len(old.Missing))
		}
		return old, nil
	}
	if d := builtOnDerived(store, opts, inputs, recipe); d != nil {
		fmt.Fprintf(say, "already built: %s, on %s, a base derived for its system packages\n", d.ID, d.Base)
		return d, nil
	}

	e.ID, e.Name, e.Repository, e.Revision = id, name, src, info.Revision
	e.Tree, e.Commit, e.Python = info.Tree, info.Commit, python
	e.TestCommand, e.Test, e.Limits, e.BuiltAt = tc, recipe.Test, opts.Limits, time.Now().UTC()
	ph.done("recipe")
	editKey := func(lock []env.LockedPackage) func(string) string {
		return func(path string) string { return editableKey(info.Commit, info.Tree, base, python, lock, path) }
	}
	var link *lockLink
	if len(opts.Lock) > 0 && mode == env.ModeOnline {
		// The layer is the install sandbox's lower layer: the links go in
		// with no sandbox over it, and the install steps get a new one.
		isb.Close()
		if link, err = linkLocked(opts.Home, opts.Lock, lockCached, layer, majorMinor(python), editKey(opts.Lock)); err != nil {
			return nil, err
		}
		if isb, err = sbs.OpenWith(ctx, e, limits); err != nil {
			return nil, fmt.Errorf("install: %w", err)
		}
	}
	installed, compiled, err := install(ctx, isb, e, recipe, repo, stg.Dir(), opts, lockCached, link, ph, logf, say)
	var lacking *lackingError
	if errors.As(err, &lacking) {
		isb.Close()
		logf.Close()
		stg.Discard()
		done = true
		return buildWithPackages(ctx, sbs, opts, lacking.need, say)
	}
	if err != nil {
		return nil, err
	}
	// The layer is the install sandbox's lower layer: change it only once
	// that sandbox is gone.
	isb.Close()
	if err := removeTools(layer); err != nil {
		return nil, fmt.Errorf("remove the build's tools from the layer: %w", err)
	}
	if err := mergeUpper(installed, layer, nil); err != nil {
		return nil, err
	}
	if err := mergeUpper(compiled, layer, isBytecode); err != nil {
		return nil, err
	}
	if e.Mode == env.ModeOnline {
		lock, err := keepDownloads(installed, opts.Home, e.Lock)
		if err != nil {
			fmt.Fprintf(say, "wheel cache: %v\n", err) // a cache: the build stands without it
		}
		e.Lock = lock
		if err := keepUVWheel(installed, opts.Home); err != nil {
			fmt.Fprintf(say, "wheel cache: %v\n", err)
		}
		if err := keepEditables(opts.Home, installed, majorMinor(python), editKey(e.Lock)); err != nil {
			fmt.Fprintf(say, "%v\n", err) // a cache too
		}
	}
	sandbox.RemoveAll(installed)
	sandbox.RemoveAll(compiled)
	ph.done("layer")

	// Baseline: every run in a fresh sandbox, so no run sees another's
	// leftovers.
	fmt.Fprintf(say, "test: %s  [%s]\n", tc.String(), recipe.Test.Provenance)
	var reps []*testrun.Report
	var noTest string // why no candidate test command is one
	var bar *progress.Bar
	if opts.Progress != nil {
		bar = progress.New(opts.Progress, "baseline runs", opts.Runs)
	}
	for i := 0; i < opts.Runs; i++ {
		stop := progress.Heartbeat(opts.Progress, fmt.Sprintf("baseline run %d/%d", i+1, opts.Runs), progress.HeartbeatEvery)
		topts := testrun.Options{PythonVersion: python, OutputLimit: opts.Limits.Output}
		var rep *testrun.Report
		if i == 0 {
			rep, noTest, err = firstRun(ctx, sbs, e, recipe, topts, logf, say)
		} else {
			rep, err = runSuite(ctx, sbs, e, topts, logf)
		}
		stop()
		if err != nil {
			bar.Done()
			return nil, fmt.Errorf("baseline run %d: %w", i+1, err)
		}
		reps = append(reps, rep)
		bar.Add(1)
		if rep.Result.Reason != sandbox.ReasonNone {
			bar.Count(string(rep.Result.Reason))
		}
		if noTest != "" {
			break // the same command collects nothing again
		}
	}
	bar.Done()
	ph.done("baseline")
	for i, rep := range reps {
		line := fmt.Sprintf("run %d/%d: %d tests in %v", i+1, opts.Runs, len(rep.Tests), rep.Result.Duration.Round(10*time.Millisecond))
		if rep.Note != "" {
			line += " (" + rep.Note + ")"
		}
		fmt.Fprintln(say, line)
	}
	e.Baseline, e.Runs, e.Counts = mergeRuns(reps)
	for _, rep := range reps {
		msgs := []byte{}
		for _, t := range rep.Tests {
			msgs = append(msgs, t.Message...)
			msgs = append(msgs, '\n')
		}
		for _, mod := range missingFromOutput(repo, rep.Result.Stdout, rep.Result.Stderr, msgs) {
			addMissingTo(&e.Missing, env.Missing{Import: mod, Source: "tests"})
		}
	}
	e.Missing = finishMissing(ctx, e.Missing, base == "host", e.Mode == env.ModeOffline)
	e.Reason = unusableReason(e.Counts, e.Runs, e.Install, e.Missing)
	if noTest != "" {
		e.Reason = noTest + "; " + e.Reason
	}
	e.Usable = e.Reason == ""
	fmt.Fprintf(say, "baseline: %s\n", e.Counts)
	for _, m := range e.Missing {
		fmt.Fprintf(say, "missing dependency: %s\n", m)
	}

	if e.Usable && !opts.NoCoverage {
		stop := progress.Heartbeat(opts.Progress, "coverage run", progress.HeartbeatEvery)
		ci, err := computeCoverage(ctx, sbs, e, logf)
		stop()
		var empty *EmptyCoverageError
		switch {
		case errors.As(err, &empty):
			// No map for a suite that passes: not an environment later
			// stages can use, and the reason says why.
			e.Usable, e.Reason = false, err.Error()
			fmt.Fprintf(say, "%s\n", err)
		case err != nil:
			return nil, err
		default:
			fmt.Fprintf(say, "coverage: %d functions under %d passing tests (%.1fs)\n", ci.Functions, ci.Tests, ci.Seconds)
		}
		ph.done("coverage")
	}

	e.BuildSecs = roundSeconds(time.Since(start))
	ph.done("finish")
	ph.write(logf)
	logf.Close()
	if err := stg.Publish(opts.Force); err != nil {
		return nil, err
	}
	done = true
	return e, nil
}

// install runs the recipe's install steps in the install sandbox and
// snapshots what they wrote (installed) and the bytecode a warm-up run
// compiled (compiled), for the caller to merge into the layer. A --locked
// build's steps take the lock's cached files (lockCached) and what
// linkLocked linked already (link, or nil).
func install(ctx context.Context, s *sandbox.Sandbox, e *env.Env, r Recipe, repo, stageDir string, opts Options, lockCached map[string]string, link *lockLink, ph *phases, logf, say io.Writer) (installed, compiled string, err error) {
	in := &installer{s: s, repo: repo, log: logf, mode: e.Mode, exclude: e.ExcludeNewer, timeout: opts.InstallTimeout, link: link}
	if opts.Egress != nil {
		in.egress = opts.Egress
		if e.Mode == env.ModeOnline {
			in.env = opts.Egress.IndexEnv()
		}
	}
	if len(opts.Lock) > 0 {
		in.planLocked(opts.Lock, lockCached)
	}
	first := venvStep
	if e.Mode != env.ModeOffline {
		first = venvStepOnline
		// Offline, a tooling package comes from the base or not at all:
		// the dependency check's hint names it.
		in.pytestImports = pytestImports(repo)
	}
	steps := append([]env.Step{first}, r.Install...)
	for i := range steps {
		st := &steps[i]
		stop := progress.Waiting(say, fmt.Sprintf("install step %d/%d (%s)", i+1, len(steps), shortCommand(st.Command)), progress.HeartbeatEvery)
		err := in.run(ctx, st)
		stop()
		if err != nil {
			return "", "", fmt.Errorf("install step %q: %w", st.Command, err)
		}
		line := fmt.Sprintf("install: %s", st.Command)
		if st.Run != "" && st.Run != st.Command {
			line += "\n         ran: " + st.Run
		}
		line += fmt.Sprintf("  [%s] %s (%.1fs)", st.Provenance, st.Status, st.Seconds)
		if st.Note != "" {
			line += ": " + st.Note
		}
		fmt.Fprintln(say, line)
		if st.Status == "failed" && in.sysNeed != nil && canDerive(opts, in.sysNeed) {
			return "", "", &lackingError{in.sysNeed}
		}
		if i == 0 && st.Status != "ok" {
			return "", "", fmt.Errorf("create the virtual environment: %s", st.Note)
		}
		if i == 0 && e.Mode != env.ModeOffline && !r.usesUV() {
			in.seedVenv(ctx) // uv's venvs have no seed: a project that syncs with uv gets none
		}
	}
	if st, ok, err := in.ensureRunner(ctx, e.TestCommand.Framework); err != nil {
		return "", "", err
	} else if ok {
		steps = append(steps, st)
		fmt.Fprintf(say, "install: %s  [%s] %s (%.1fs)\n", st.Command, st.Provenance, st.Status, st.Seconds)
	}
	e.Install = steps
	ph.done("install")
	if err := in.checkDependencies(ctx, "/venv/bin/python"); err != nil {
		return "", "", err
	}
	ph.done("deps")
	e.Missing = in.missing
	e.Lock = in.lock
	for i, p := range e.Lock {
		// A --locked build that took a file from the wheel cache keeps
		// the lock's source: the same artifact, by its digest.
		for _, q := range opts.Lock {
			if q.Name == p.Name && q.SHA256 != "" && q.SHA256 == p.SHA256 {
				e.Lock[i].URL = q.URL
			}
		}
	}
	for _, q := range opts.Lock {
		// The lock's build entries were staged for the project's build
		// (from the wheel cache, no download to record): they stay.
		if q.Build {
			e.Lock = append(e.Lock, q)
		}
	}

	installed = filepath.Join(stageDir, "upper-install")
	if err := s.Snapshot(installed); err != nil {
		return "", "", fmt.Errorf("snapshot the installation: %w", err)
	}
	ph.done("snapshot")
	// Compile the bytecode once into the layer (and, for pytest, let it
	// cache its rewritten test modules): every later run would otherwise
	// compile it again in its own throwaway upper layer. The venv's
	// packages are compiled whole, warnings ignored, as pip's install
	// compiles them (the install runs with --no-compile): a suite that
	// makes warnings errors (pytest's filterwarnings = error, -W error)
	// otherwise fails importing a dependency whose source has a
	// SyntaxWarning ("invalid escape sequence"), which compiled bytecode
	// never shows (flask 2.0 and blinker).
	warm := []string{
		"python -W ignore -m compileall -q -j 0 " + env.VenvRoot + "/lib >/dev/null 2>&1 || true",
		repoCompile("/repo"),
	}
	if e.TestCommand.Framework == testrun.Pytest {
		dir := filepath.Join("/repo", e.TestCommand.Dir)
		args := append([]string{"python", "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"}, e.TestCommand.Args...)
		warm = append(warm, "cd "+testrun.Join([]string{dir})+" && "+testrun.Join(args)+" >/dev/null 2>&1 || true")
	}
	for _, w := range warm {
		if _, err := s.Exec(ctx, sandbox.Cmd{Shell: w, Env: []string{"PYTHONDONTWRITEBYTECODE="}, Timeout: opts.InstallTimeout}); err != nil {
			return "", "", fmt.Errorf("compile bytecode: %w", err)
		}
	}
	compiled = filepath.Join(stageDir, "upper-compiled")
	if err := s.Snapshot(compiled); err != nil {
		return "", "", fmt.Errorf("snapshot compiled bytecode: %w", err)
	}
	ph.done("bytecode")
	return installed, compiled, nil
}

func addMissingTo(list *[]env.Missing, m env.Missing) {
	for _, have := range *list {
		if have.Import == m.Import || (have.Import == "" && importName(have.Requirement) == m.Import) {
			return
		}
	}
	*list = append(*list, m)
}

// idVersion is the version of what an environment's id hashes; a layer
// migration does not change ids. Version 2 added the install mode, the
// exclude-newer date, the lock of --locked builds and the pip of online
// builds (version 1 hashed an online flag).
const idVersion = 2

// idInputs are what an environment's id hashes besides its recipe, all
// known before anything is installed, so that a build finds a stored
// environment before installing.
type idInputs struct {
	commit, tree, base, python, mode, excludeNewer string
	lock                                           []env.LockedPackage
}

// envID hashes what determines an environment's content: the commit in
// the layer (its tree and, for a git source, its history; a plain
// directory's commit is a function of its tree), the base and its Python,
// the mode and what bounds resolution, and the recipe.
func envID(in idInputs, r Recipe) string {
	h := sha256.New()
	fmt.Fprintf(h, "cwm environment v%d\ncommit %s\ntree %s\nbase %s\npython %s\nmode %s\n", idVersion, in.commit, in.tree, in.base, in.python, in.mode)
	if in.mode != env.ModeOffline {
		fmt.Fprintf(h, "pip %s\nexclude-newer %s\n", pipWheelSHA256, in.excludeNewer)
	}
	if in.mode == env.ModeOnline && len(in.lock) == 0 && r.usesUV() {
		// Its uv steps run with this uv (docs/environments.md, "uv").
		fmt.Fprintf(h, "uv %s\n", uvVersion)
	}
	if len(in.lock) > 0 {
		fmt.Fprintf(h, "lock %s\n", lockDigest(in.lock))
	}
	for _, s := range r.Install {
		fmt.Fprintf(h, "install %s\n", s.Command)
	}
	fmt.Fprintf(h, "test %s\n", r.Test.Command)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// programFinder reports whether the sandbox has a program on its PATH
// (the environment's venv first, then the base system's), asking once per
// name.
func programFinder(ctx context.Context, s *sandbox.Sandbox) func(string) bool {
	seen := map[string]bool{}
	return func(prog string) bool {
		if ok, done := seen[prog]; done {
			return ok
		}
		res, err := s.Exec(ctx, sandbox.Cmd{Shell: "command -v " + testrun.Join([]string{prog}) + " >/dev/null", Timeout: time.Minute})
		ok := err != nil || res.Success() // a sandbox that cannot answer finds everything
		seen[prog] = ok
		return ok
	}
}

func pythonVersion(ctx context.Context, s *sandbox.Sandbox, python string) (string, error) {
	res, err := s.Exec(ctx, sandbox.Cmd{Args: []string{python, "-c", "import platform; print(platform.python_version())"}, Timeout: time.Minute})
	if err != nil {
		return "", fmt.Errorf("find Python in the sandbox: %w", err)
	}
	if !res.Success() {
		return "", fmt.Errorf("find Python in the sandbox: %s%s", res.Describe(), testrun.LastLine(res.Stderr))
	}
	return strings.TrimSpace(string(res.Stdout)), nil
}

func majorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// RevisionName is the name of an environment built from another one's
// repository at an older revision (a task's parent, a commit of its
// history): NAME@ and the revision's first 12 characters. Built under
// NAME itself, it would take the name over, since a name resolves to the
// most recently built usable environment.
func RevisionName(name, rev string) string { return name + "@" + short(rev) }

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// AtRevision builds e's repository at revision rev with e's test command
// and limits, and no coverage map: the environment of an issue-fix task
// whose fix is rev's child. It is named RevisionName(e.Name, rev), so e's
// name goes on naming e. opts gives the store (Home), the baseline runs,
// the progress and the log; its other fields are e's.
func AtRevision(ctx context.Context, sbs *env.Sandboxes, e *env.Env, rev string, opts Options) (*env.Env, error) {
	opts.Source, opts.Rev, opts.Name, opts.Test = e.Repository.Location, rev, RevisionName(e.Name, rev), e.Test.Command
	opts.Install, opts.NoCoverage, opts.Limits = nil, true, e.Limits
	if e.Mode != "" {
		opts.Mode = e.Mode // a task's parent installs as its child did
	}
	return Build(ctx, sbs, opts)
}

// shortCommand is a command cut for a progress line.
func shortCommand(c string) string {
	if c, _, _ = strings.Cut(c, "\n"); len(c) > 60 {
		return c[:57] + "..."
	}
	return c
}
