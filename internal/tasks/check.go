package tasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"cwm/internal/env"
	"cwm/internal/mutate"
	"cwm/internal/sandbox"
	"cwm/internal/task"
	"cwm/internal/testrun"
)

// candidate is a mutant ready for validation.
type candidate struct {
	m       mutate.Mutant
	key     string // content hash of the mutated file: one bug, one key
	mutated []byte
	tests   []string // the passing tests that execute the mutated function(s)
	fn      string   // file::function, for the per-function cap
	id      string   // instance id the task would get
}

// Decision kinds: why a candidate was rejected, or that it was verified.
const (
	kindVerified   = "verified"
	kindSurvived   = "survived"          // no covering test fails
	kindImport     = "crashes at import" // the module or a test module no longer imports
	kindHang       = "hangs"             // a run outlived its budget
	kindLimit      = "limit"             // a run hit another sandbox limit
	kindNoF2P      = "no FAIL_TO_PASS"   // failures did not survive the whole suite
	kindUnverified = "not verified"      // a verification check did not hold
)

// decision is one line of the decisions file: a candidate decided, with
// the reason, so that a re-run skips it.
type decision struct {
	Key        string  `json:"key"`
	InstanceID string  `json:"instance_id,omitempty"`
	Kind       string  `json:"kind"`
	Stage      string  `json:"stage,omitempty"`
	Reason     string  `json:"reason,omitempty"`
	Family     string  `json:"family"`
	Operator   string  `json:"operator"`
	File       string  `json:"file"`
	Function   string  `json:"function"`
	Desc       string  `json:"desc"`
	TestsRun   int     `json:"tests_run"`
	Seconds    float64 `json:"seconds"`
	// Stages is the time spent in each stage reached: covering,
	// whole_suite, verify.
	Stages map[string]float64 `json:"stages,omitempty"`
}

// worker validates candidates in its own sandbox.
type worker struct {
	r  *mutateRun
	sb *sandbox.Sandbox
}

const importCheckPy = "import importlib, sys; sys.path.insert(0, sys.argv[1]); importlib.import_module(sys.argv[2])"

// validate decides one candidate: run the covering tests on the mutant,
// then the whole suite, then verify the task. Every step starts from a
// reset sandbox and makes the buggy tree with git apply of the bug patch,
// as a harness will. The error is for failures of cwm, never of the
// mutant.
func (w *worker) validate(ctx context.Context, c *candidate) (decision, *task.Task, error) {
	start := time.Now()
	r, sb := w.r, w.sb
	e := r.env
	full := r.opts.FullSuite
	d := decision{Key: c.key, Family: c.m.Family, Operator: c.m.Operator, File: c.m.File,
		Function: c.m.Function, Desc: c.m.Desc, Stages: map[string]float64{}}
	done := func(kind, stage, reason string) (decision, *task.Task, error) {
		d.Kind, d.Stage, d.Reason = kind, stage, reason
		d.Seconds = roundSecs(time.Since(start))
		return d, nil, nil
	}
	mark := time.Now()
	stage := func(name string) {
		d.Stages[name] = roundSecs(time.Since(mark))
		mark = time.Now()
	}
	applyFailed := func(err error) (decision, *task.Task, error) {
		var pe *patchError
		if errors.As(err, &pe) {
			return done(kindUnverified, "apply", pe.Error())
		}
		return d, nil, err
	}
	// buggy resets sb and applies the bug patch.
	buggy := func(bug string) error {
		if err := sb.Reset(ctx); err != nil {
			return fmt.Errorf("reset sandbox: %w", err)
		}
		return applyPatch(ctx, sb, "bug_patch", bug)
	}

	if err := sb.Reset(ctx); err != nil {
		return d, nil, fmt.Errorf("reset sandbox: %w", err)
	}
	probe, err := r.importable(ctx, sb, c.m.File)
	if err != nil {
		return d, nil, err
	}
	bug, gold, err := mutantPatches(ctx, sb, c.m.File, c.mutated)
	if err != nil {
		return d, nil, err
	}

	var checks []string
	var covering map[string]testrun.Test
	if !full {
		if err := buggy(bug); err != nil {
			return applyFailed(err)
		}
		if k, why, err := r.importCheck(ctx, sb, probe); err != nil || k != "" {
			if err != nil {
				return d, nil, err
			}
			return done(k, "import", why)
		}
		limit := r.budget.timeout(c.tests)
		rep, err := runTests(ctx, sb, e, c.tests, limit)
		if err != nil {
			return d, nil, err
		}
		d.TestsRun += len(rep.Tests)
		if k, why := r.broken(rep, limit); k != "" {
			return done(k, "covering tests", why)
		}
		covering = outcomes(rep)
		broke := 0
		for _, id := range c.tests {
			if failed(covering[id].Outcome) {
				broke++
			}
		}
		if broke == 0 {
			return done(kindSurvived, "covering tests", fmt.Sprintf("the %d passing tests that execute %s still pass", len(c.tests), c.m.Function))
		}
		r.countBroke(c.m.Family)
		checks = append(checks, fmt.Sprintf("mutant fails %d of the %d covering tests", broke, len(c.tests)))
		stage("covering")
	}

	if err := buggy(bug); err != nil {
		return applyFailed(err)
	}
	limit := r.budget.timeout(nil)
	rep, err := runTests(ctx, sb, e, nil, limit)
	if err != nil {
		return d, nil, err
	}
	d.TestsRun += len(rep.Tests)
	if k, why := r.broken(rep, limit); k != "" {
		return done(k, "whole suite", why)
	}
	select {
	case <-r.goldReady:
	case <-ctx.Done():
		return d, nil, ctx.Err()
	}
	if r.goldErr != nil {
		return d, nil, r.goldErr
	}
	got := outcomes(rep)
	var f2p, p2p []string
	for _, id := range r.stable {
		switch o := got[id].Outcome; {
		case failed(o):
			f2p = append(f2p, id)
		case o == testrun.Pass:
			p2p = append(p2p, id)
		}
	}
	if len(f2p) == 0 {
		if full {
			return done(kindSurvived, "whole suite", "every test that passed at baseline still passes")
		}
		return done(kindNoF2P, "whole suite", "the covering tests failed alone but every test passes in the whole suite")
	}
	if full {
		r.countBroke(c.m.Family)
	}
	checks = append(checks, fmt.Sprintf("whole suite on the buggy tree: %d FAIL_TO_PASS, %d PASS_TO_PASS, %d flaky or unstable tests left out",
		len(f2p), len(p2p), r.leftOut))
	t := &task.Task{
		InstanceID: c.id, Repo: r.repo, BaseCommit: e.Commit, Patch: gold, TestPatch: "",
		ProblemStatement: problemStatement(f2p, got), FailToPass: f2p, PassToPass: p2p,
		Version: e.ID, CreatedAt: time.Now().UTC().Format(time.RFC3339), EnvironmentSetupCommit: e.Commit,
		EnvID: e.ID, BugPatch: bug, Kind: "mutate", Family: c.m.Family, Operator: c.m.Operator,
		File: c.m.File, Function: c.m.Function,
	}
	stage("whole_suite")

	// The covering tests' run, made before FAIL_TO_PASS was known, is
	// the first check of the buggy tree when it ran every FAIL_TO_PASS
	// test; a second run of FAIL_TO_PASS alone follows either way.
	v := verdict{checks: checks}
	run := 1
	if covering != nil && allFailed(covering, f2p) {
		v.checks = append(v.checks, fmt.Sprintf("buggy tree fails all %d FAIL_TO_PASS tests (run 1, the covering tests' run)", len(f2p)))
		run = 2
	}
	for ; run <= 2 && v.problem == ""; run++ {
		if err := r.verifier.checkBug(ctx, sb, t, run, full, &v); err != nil {
			return d, nil, err
		}
	}
	if v.problem == "" {
		if err := r.verifier.checkGold(ctx, sb, t, 2, full, &v); err != nil {
			return d, nil, err
		}
	}
	d.TestsRun += v.testsRun
	stage("verify")
	if v.problem != "" {
		return done(kindUnverified, "verification", v.problem)
	}
	d.Kind, d.InstanceID = kindVerified, t.InstanceID
	d.Seconds = roundSecs(time.Since(start))
	t.Validation = &task.Validation{TestsRun: d.TestsRun, Seconds: d.Seconds, Checks: v.checks}
	return d, t, nil
}

// allFailed reports whether every id ran in got and failed.
func allFailed(got map[string]testrun.Test, ids []string) bool {
	for _, id := range ids {
		if o, ok := got[id]; !ok || !failed(o.Outcome) {
			return false
		}
	}
	return true
}

// importCheck imports the mutated module when it imported on the
// environment's tree: a failure is a crash at import, not a bug for the
// tests to show.
func (r *mutateRun) importCheck(ctx context.Context, sb *sandbox.Sandbox, probe *importProbe) (string, string, error) {
	if !probe.ok {
		return "", "", nil
	}
	limit := r.budget.timeout([]string{})
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"python", "-c", importCheckPy, probe.root, probe.module}, Dir: "/repo", Timeout: limit})
	if err != nil {
		return "", "", fmt.Errorf("import %s: %w", probe.module, err)
	}
	switch {
	case res.Reason == sandbox.ReasonTimeout:
		return kindHang, fmt.Sprintf("importing %s hangs: still running after %s", probe.module, limit.Round(100*time.Millisecond)), nil
	case !res.Success():
		return kindImport, fmt.Sprintf("importing %s fails: %s", probe.module, scrub(lastLine(res.Stderr))), nil
	}
	return "", "", nil
}

// broken classifies a run that says nothing about the mutant's tests: it
// was stopped, or a module (the mutated one, or a test module importing
// it) failed to import, which pytest reports as an error of an id the
// baseline never had.
func (r *mutateRun) broken(rep *testrun.Report, limit time.Duration) (string, string) {
	switch rep.Result.Reason {
	case sandbox.ReasonNone:
	case sandbox.ReasonTimeout:
		return kindHang, stopped(rep, limit)
	default:
		return kindLimit, stopped(rep, limit)
	}
	for _, t := range rep.Tests {
		if _, known := r.baseline[t.ID]; !known && failed(t.Outcome) {
			return kindImport, fmt.Sprintf("%s does not import: %s", t.ID, scrub(t.Message))
		}
	}
	if len(rep.Tests) == 0 {
		return kindImport, "no test ran: " + scrub(rep.Note)
	}
	return "", ""
}

// importProbe says whether a file's module imports on the environment's
// tree; only then does a mutant that breaks its import count as a crash at
// import rather than something the tests will show.
type importProbe struct {
	once   sync.Once
	ok     bool
	module string
	root   string
	err    error
}

// importable probes file's module once per run, in sb, which must hold
// the environment's tree.
func (r *mutateRun) importable(ctx context.Context, sb *sandbox.Sandbox, file string) (*importProbe, error) {
	r.mu.Lock()
	p := r.probes[file]
	if p == nil {
		p = &importProbe{}
		r.probes[file] = p
	}
	r.mu.Unlock()
	p.once.Do(func() {
		p.module, p.root, p.err = moduleName(ctx, sb, file)
		if p.module == "" || p.err != nil {
			return
		}
		res, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"python", "-c", importCheckPy, p.root, p.module}, Dir: "/repo", Timeout: r.budget.timeout([]string{})})
		if err != nil {
			p.err = fmt.Errorf("import %s: %w", p.module, err)
			return
		}
		p.ok = res.Success()
	})
	return p, p.err
}

// moduleName is the dotted module of a repository file and the directory
// to put on sys.path for it: the packages are the directories holding an
// __init__.py, from the file's up, as sb (holding the environment's tree)
// shows them.
func moduleName(ctx context.Context, sb *sandbox.Sandbox, file string) (module, root string, err error) {
	if !strings.HasSuffix(file, ".py") {
		return "", "", nil
	}
	dir, base := path.Split(file)
	dir = strings.TrimSuffix(dir, "/")
	var parts []string
	if base != "__init__.py" {
		parts = []string{strings.TrimSuffix(base, ".py")}
	}
	for dir != "" && dir != "." {
		if _, err := sb.Stat(ctx, path.Join(env.RepoRoot, dir, "__init__.py")); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				break
			}
			return "", "", fmt.Errorf("module of %s: %w", file, err)
		}
		parts = append([]string{path.Base(dir)}, parts...)
		dir = path.Dir(dir)
		if dir == "." {
			dir = ""
		}
	}
	if len(parts) == 0 {
		return "", "", nil
	}
	return strings.Join(parts, "."), path.Join(env.RepoRoot, dir), nil
}

func roundSecs(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

// unionTests merges sorted test lists.
func unionTests(lists ...[]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lists {
		for _, id := range l {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	sort.Strings(out)
	return out
}
