package tasks

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"path"
	"sort"
	"sync"
	"time"

	"cwm/internal/env"
	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/mutate"
	"cwm/internal/sandbox"
	"cwm/internal/shard"
	"cwm/internal/task"
	"cwm/internal/testrun"
)

// MutateOptions configure a mutate-fix run.
type MutateOptions struct {
	// Out is the tasks file (JSONL); decisions go to Out.decisions.jsonl.
	Out string
	// Families to use (default all five).
	Families []string
	// Max is how many verified tasks to write, counting those already in
	// Out (0: no limit).
	Max int
	// PerFunction caps the tasks of one function (0: no cap).
	PerFunction int
	// Seed orders the candidates and samples the sites.
	Seed int64
	// Shard takes a deterministic part of the functions.
	Shard shard.Shard
	// Workers validate candidates at once, each in its own sandbox
	// (default 1).
	Workers int
	// Coverage is the environment's test-to-code map, which decides what
	// is mutated and which tests run first; nil reads the stored one
	// (envbuild.EnsureCoverage computes it when the build did not).
	Coverage *env.Coverage
	// Functions, when set, restricts the run to the covered functions
	// these queries name (see env.Coverage.FindFunctions).
	Functions []string
	// PerOperator caps the sites of one operator in one function (default 8).
	PerOperator int
	// FullSuite validates every candidate with the whole suite at every
	// step: no test-to-code map, no shared gold runs. It exists as the
	// baseline the benchmark compares against.
	FullSuite bool
	// TimeoutFactor scales the baseline's durations into run timeouts
	// (default 3, plus 5 seconds).
	TimeoutFactor float64
	// Exclude, when set, refuses environments whose repository it lists.
	Exclude *Exclusions
	// Progress receives a progress bar; nil for none.
	Progress io.Writer
	Log      *slog.Logger
}

// FamilyCounts is the funnel of one family.
type FamilyCounts struct {
	Candidates int `json:"candidates"` // sites the operators found
	Applicable int `json:"applicable"` // sites whose edit changes the program
	Compiled   int `json:"compiled"`   // mutants that compile
	Duplicates int `json:"duplicates"` // same bug as an earlier mutant
	Unexecuted int `json:"unexecuted"` // no passing test executes the mutated lines
	Tried      int `json:"tried"`      // validated in this run
	BrokeTests int `json:"broke_tests"`
	Verified   int `json:"verified"` // written in this run
}

// Summary is what a mutate run did.
type Summary struct {
	Families map[string]*FamilyCounts `json:"families"`
	// Rejected counts the rejected candidates by kind.
	Rejected map[string]int `json:"rejected"`
	// Resumed counts the candidates skipped because an earlier run
	// decided them; Existing the tasks already in the output.
	Resumed  int     `json:"resumed"`
	Existing int     `json:"existing"`
	Written  int     `json:"written"`
	Seconds  float64 `json:"seconds"`
	// GoldSeconds is the time of the shared whole-suite runs of the
	// environment's tree.
	GoldSeconds float64 `json:"gold_seconds"`
}

// mutateRun is the state one Mutate call shares between its workers.
type mutateRun struct {
	env      *env.Env
	opts     MutateOptions
	repo     string
	budget   budget
	verifier *verifier
	baseline map[string]string // every baseline test's status
	stable   []string          // passing at baseline and in the session's gold runs
	leftOut  int               // passing at baseline but flaky or unstable
	// goldReady is closed when the session's gold runs are done: stable,
	// leftOut and goldErr are set by then.
	goldReady chan struct{}
	goldErr   error

	// mu guards probes and the counts workers add to summary
	// (countBroke); the rest of summary is written by one goroutine.
	mu      sync.Mutex
	probes  map[string]*importProbe
	summary *Summary
}

func (r *mutateRun) countBroke(family string) {
	r.mu.Lock()
	r.summary.Families[family].BrokeTests++
	r.mu.Unlock()
}

// Mutate makes mutate-fix tasks from e, in sandboxes of sbs, and appends
// them to opts.Out.
func Mutate(ctx context.Context, sbs *env.Sandboxes, e *env.Env, opts MutateOptions) (*Summary, error) {
	start := time.Now()
	if opts.Workers < 1 {
		opts.Workers = 1
	}
	if len(opts.Families) == 0 {
		opts.Families = mutate.Families
	}
	if !e.Usable {
		return nil, errkind.Errorf(errkind.Input, "environment %s is not usable: %s", e.ID, e.Reason)
	}
	cov := opts.Coverage
	if cov == nil {
		var err error
		if cov, err = env.LoadCoverage(e); err != nil {
			return nil, fmt.Errorf("test-to-code map of %s: %w", e.ID, err)
		}
	}
	r := &mutateRun{env: e, opts: opts, repo: RepoName(e), budget: newBudget(e, opts.TimeoutFactor),
		baseline: map[string]string{}, probes: map[string]*importProbe{},
		summary: &Summary{Families: map[string]*FamilyCounts{}, Rejected: map[string]int{}}}
	for _, f := range mutate.AllFamilies {
		r.summary.Families[f] = &FamilyCounts{}
	}
	for _, t := range e.Baseline {
		r.baseline[t.ID] = t.Status
	}
	r.verifier = newVerifier(e, r.budget, !opts.FullSuite)

	boxes := make([]*sandbox.Sandbox, opts.Workers)
	defer func() {
		for _, sb := range boxes {
			if sb != nil {
				sb.Close()
			}
		}
	}()
	for i := range boxes {
		var err error
		if boxes[i], err = sbs.Open(ctx, e); err != nil {
			return nil, err
		}
	}
	if opts.Exclude != nil {
		if err := opts.Exclude.Check(ctx, boxes[0], e); err != nil {
			return nil, err
		}
	}

	cands, err := r.candidates(ctx, boxes[0], cov)
	if err != nil {
		return nil, err
	}
	queue, perFn, err := r.resume(cands)
	if err != nil {
		return nil, err
	}
	// The session's gold runs go alongside the first validations, in
	// sandboxes of their own: a validation needs them only once its
	// whole-suite run is over.
	r.goldReady = make(chan struct{})
	if len(queue) > 0 && (opts.Max == 0 || r.summary.Existing < opts.Max) && !opts.FullSuite {
		gctx, cancel := context.WithCancel(ctx)
		defer func() {
			cancel()
			<-r.goldReady
		}()
		go func() {
			defer close(r.goldReady)
			r.goldErr = r.sessionGold(gctx, sbs)
		}()
	} else {
		r.stable = e.Passing()
		r.leftOut = len(e.Baseline) - len(r.stable)
		close(r.goldReady)
	}
	if err := r.dispatch(ctx, boxes, queue, perFn); err != nil {
		return r.summary, err
	}
	r.summary.Seconds = roundSecs(time.Since(start))
	return r.summary, nil
}

// sessionGold runs the whole suite twice, at once in two sandboxes, on
// the environment's tree: the gold tree of every mutate-fix task. Passing
// tests that do not pass in both runs join the flaky ones in neither list.
func (r *mutateRun) sessionGold(ctx context.Context, sbs *env.Sandboxes) error {
	t0 := time.Now()
	boxes := make([]*sandbox.Sandbox, 2)
	for i := range boxes {
		sb, err := sbs.Open(ctx, r.env)
		if err != nil {
			return err
		}
		defer sb.Close()
		boxes[i] = sb
	}
	tree, _, err := treeHash(ctx, boxes[0])
	if err != nil {
		return err
	}
	reps := make([]*testrun.Report, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, sb := range boxes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = sb.Reset(ctx); errs[i] == nil {
				reps[i], errs[i] = runTests(ctx, sb, r.env, nil, r.budget.timeout(nil))
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("whole-suite runs of the environment's tree: %w", err)
	}
	for i, rep := range reps {
		if why := stopped(rep, r.budget.timeout(nil)); why != "" {
			return fmt.Errorf("whole-suite run %d of the environment's tree: %s", i+1, why)
		}
	}
	r.verifier.seedGold(tree, reps)
	var bad map[string]bool
	r.stable, bad = stableTests(r.env, reps)
	r.leftOut = len(r.env.Baseline) - len(r.stable)
	r.summary.GoldSeconds = roundSecs(time.Since(t0))
	if len(bad) > 0 && r.opts.Log != nil {
		r.opts.Log.Warn("tests passing at baseline did not pass in the session's runs; left out of every task", "tests", sortedKeys(bad))
	}
	return nil
}

// candidates asks mutate.py for the mutants of the covered functions of
// this shard and turns them into candidates, in the seed's order.
func (r *mutateRun) candidates(ctx context.Context, sb *sandbox.Sandbox, cov *env.Coverage) ([]*candidate, error) {
	testsOf := map[env.FuncRef][]string{}
	for _, fc := range cov.Functions() {
		testsOf[fc.Func] = fc.Tests
	}
	wanted := map[env.FuncRef]bool{}
	if len(r.opts.Functions) > 0 {
		for _, q := range r.opts.Functions {
			refs := cov.FindFunctions(q)
			if len(refs) == 0 {
				return nil, fmt.Errorf("no covered function of %s matches %q", r.env.ID, q)
			}
			for _, f := range refs {
				wanted[f] = true
			}
		}
	}
	// Every covered function of the files concerned is analysed, and the
	// shard and --functions filters apply to the mutants afterwards: a
	// module-level import belongs to the first covered function reading
	// it, which must not depend on the shard, or two shards would make the
	// same task.
	files := map[string]bool{}
	for f := range testsOf {
		if len(wanted) == 0 || wanted[f] {
			files[f.File] = true
		}
	}
	keep := func(file string, fn mutate.Func, affects []mutate.Func) bool {
		if !r.opts.Shard.Has(functionKey(file, fn.Name)) {
			return false
		}
		if len(wanted) == 0 {
			return true
		}
		for _, a := range affects {
			if wanted[env.FuncRef{File: file, Name: a.Name, Line: a.Line}] {
				return true
			}
		}
		return false
	}
	req := mutate.Request{Seed: r.opts.Seed, Families: r.opts.Families, PerOperator: r.opts.PerOperator,
		Files: map[string]mutate.FileSpec{}, Python: "python"}
	for f := range testsOf {
		if !files[f.File] {
			continue
		}
		spec := req.Files[f.File]
		spec.Functions = append(spec.Functions, mutate.Func{Name: f.Name, Line: f.Line})
		req.Files[f.File] = spec
	}
	for file, spec := range req.Files {
		lines := map[int]bool{}
		for _, tc := range cov.Tests {
			for _, l := range tc.Lines[file] {
				lines[l] = true
			}
		}
		for l := range lines {
			spec.Executed = append(spec.Executed, l)
		}
		sort.Ints(spec.Executed)
		sort.Slice(spec.Functions, func(i, j int) bool { return spec.Functions[i].Line < spec.Functions[j].Line })
		req.Files[file] = spec
	}
	res, err := mutate.Generate(ctx, sb, req)
	if err != nil {
		return nil, fmt.Errorf("mutants of %s: %w", r.env.ID, err)
	}
	for _, e := range res.Errors {
		r.logf("cannot analyse %s", e)
	}
	for _, u := range res.Unmatched {
		r.logf("covered function not found in the source: %s", u)
	}
	for _, st := range res.Stats {
		fn := mutate.Func{Name: st.Function, Line: st.Line}
		if fc := r.summary.Families[st.Family]; fc != nil && keep(st.File, fn, []mutate.Func{fn}) {
			fc.Candidates += st.Sites
			fc.Applicable += st.Sites - st.Identical
			fc.Compiled += st.Sites - st.Identical - st.Syntax
		}
	}
	sources := map[string][]byte{}
	seen := map[string]bool{}
	var out []*candidate
	for _, m := range res.Mutants {
		if !keep(m.File, mutate.Func{Name: m.Function, Line: m.Line}, m.Affects) {
			continue
		}
		src, ok := sources[m.File]
		if !ok {
			// sb holds the environment's tree: mutate.py only reads it.
			if src, err = sb.ReadFile(ctx, path.Join(env.RepoRoot, m.File), maxSourceBytes); err != nil {
				return nil, fmt.Errorf("read %s of %s: %w", m.File, r.env.ID, err)
			}
			sources[m.File] = src
		}
		mutated, err := m.Apply(src)
		if err != nil {
			return nil, err
		}
		fc := r.summary.Families[m.Family]
		key := mutate.Key(m.File, mutated)
		if seen[key] {
			fc.Duplicates++
			continue
		}
		seen[key] = true
		var lists [][]string
		for _, a := range m.Affects {
			lists = append(lists, testsOf[env.FuncRef{File: m.File, Name: a.Name, Line: a.Line}])
		}
		out = append(out, &candidate{m: m, key: key, mutated: mutated, tests: unionTests(lists...),
			fn: m.File + "::" + m.Function, id: instanceID(r.repo, m.Family, key[:12])})
	}
	// Mutants no passing test executes can only survive: the map drops
	// them for free. They are ordered with the rest all the same, so that
	// the full-suite strategy, which tries them, sees the same sequence.
	var kept []*candidate
	for _, c := range order(out, r.opts.Seed) {
		if !r.opts.FullSuite && (!c.m.Executed || len(c.tests) == 0) {
			r.summary.Families[c.m.Family].Unexecuted++
			continue
		}
		kept = append(kept, c)
	}
	return kept, nil
}

// maxSourceBytes bounds a source file read to mutate it.
const maxSourceBytes = 64 << 20

// order puts the candidates in the seed's order: round by round, where a
// candidate's round is its rank among its function's candidates of its
// family, and within a round by a hash of the seed and the mutant. Every
// family and every function is in the first round, so a run stopped by
// --max still covers them all; and a candidate's place relative to its
// function's others depends only on that function's candidates, which all
// fall in the same shard, so --per-function picks the same tasks in a
// shard as in the whole run: a sharded run merges into the unsharded one.
func order(cands []*candidate, seed int64) []*candidate {
	rank := func(c *candidate) uint64 {
		h := fnv.New64a()
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(seed))
		h.Write(b[:])
		h.Write([]byte(c.m.Family))
		h.Write([]byte{0})
		h.Write([]byte(c.key))
		return h.Sum64()
	}
	type placed struct {
		c     *candidate
		round int
		hash  uint64
	}
	ps := make([]placed, len(cands))
	groups := map[string][]int{} // function and family -> indexes in ps
	for i, c := range cands {
		ps[i] = placed{c: c, hash: rank(c)}
		g := c.fn + "\x00" + c.m.Family
		groups[g] = append(groups[g], i)
	}
	for _, idx := range groups {
		sort.Slice(idx, func(a, b int) bool { return ps[idx[a]].hash < ps[idx[b]].hash })
		for r, i := range idx {
			ps[i].round = r
		}
	}
	sort.Slice(ps, func(a, b int) bool {
		if ps[a].round != ps[b].round {
			return ps[a].round < ps[b].round
		}
		return ps[a].hash < ps[b].hash
	})
	out := make([]*candidate, len(ps))
	for i, p := range ps {
		out[i] = p.c
	}
	return out
}

// resume drops the candidates an earlier run decided (or wrote) and
// counts the tasks already written, per function.
func (r *mutateRun) resume(cands []*candidate) ([]*candidate, map[string]int, error) {
	decided, err := jsonl.Keys(decisionsPath(r.opts.Out), jsonl.Field("key"))
	if err != nil {
		return nil, nil, fmt.Errorf("read earlier decisions: %w", err)
	}
	tasks, err := task.Written(r.opts.Out)
	if err != nil {
		return nil, nil, fmt.Errorf("read earlier tasks: %w", err)
	}
	written := map[string]bool{}
	perFn := map[string]int{}
	for _, t := range tasks {
		written[t.InstanceID] = true
		if t.EnvID == r.env.ID {
			perFn[t.File+"::"+t.Function]++
		}
	}
	r.summary.Existing = len(tasks)
	var queue []*candidate
	for _, c := range cands {
		if decided[c.key] || written[c.id] {
			r.summary.Resumed++
			continue
		}
		queue = append(queue, c)
	}
	return queue, perFn, nil
}

func decisionsPath(out string) string { return out + ".decisions.jsonl" }

func (r *mutateRun) logf(format string, args ...any) {
	if r.opts.Log != nil {
		r.opts.Log.Warn(fmt.Sprintf(format, args...))
	}
}
