package selection

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"cwm/internal/agent"
	"cwm/internal/env"
	"cwm/internal/model"
	"cwm/internal/reward"
	"cwm/internal/task"
)

// Method names a way of picking.
type Method string

const (
	// MethodBest is best@k: most tests passed (CWM).
	MethodBest Method = "best"
	// MethodMajority is majority@k: the most common normalised patch.
	MethodMajority Method = "majority"
	// MethodHybrid is R2E-Gym's hybrid (get_hybrid_aggregation, see
	// HybridFinalists): the top half by the verifier's P(YES), then the
	// most regression tests, the most kept tests, the highest P(YES).
	MethodHybrid Method = "hybrid"
	// MethodBestVerifier is best@k, then the verifier's P(YES) among the
	// patches tied at the most tests passed (what cwm called hybrid
	// before it computed R2E-Gym's).
	MethodBestVerifier Method = "best-verifier"
)

// MethodVersions name the version of each method's procedure that a
// prediction's account records (method_version), so that a figure says
// which definition it was computed with; docs/select.md describes each.
var MethodVersions = map[Method]string{
	MethodBest:         "best-1",
	MethodMajority:     "majority-1",
	MethodHybrid:       "hybrid-r2egym-1",
	MethodBestVerifier: "best-verifier-1",
}

// asksVerifier says whether a method asks the verifier model.
func (m Method) asksVerifier() bool { return m == MethodHybrid || m == MethodBestVerifier }

// Config is how a task's candidates are selected.
type Config struct {
	// Client writes the tests.
	Client *model.Client
	// Verifier judges the patches for hybrid and best-verifier (R2E-Gym's
	// execution-free verifier: P("YES") from logprobs).
	Verifier *model.Client
	// VerifyEach asks the verifier about every candidate with its own
	// trajectory, as R2E-Gym does, rather than once per class of equal
	// patches (its first candidate's).
	VerifyEach bool
	// Tests is how many tests the model writes (CWM: 40); Keep how many
	// of the reproducing ones are kept (CWM: 5).
	Tests, Keep int
	// Testgen is how the tests are written: TestgenPrompt (when empty) or
	// TestgenAgent, whose episodes have TestgenLimits (CWM's agent limits
	// where zero).
	Testgen       string
	TestgenLimits agent.Limits
	// Regression, when positive, samples that many regression tests.
	Regression int
	// RegressionSet is RegressionExisting (CWM's, when empty) or
	// RegressionStrict.
	RegressionSet string
	Method        Method
	// Majority is majority@k's grouping: GroupExact (CWM's, when empty)
	// or GroupNormalised.
	Majority string
	// Curves grades every candidate with the hidden tests (after the
	// selection) and computes the curves over k.
	Curves bool
	// Naive runs the naive procedure instead, the baseline of the
	// benchmark: every non-empty candidate (not once per class) in a
	// fresh sandbox runs every generated test and the whole regression
	// set, with no early stopping. It picks the same patch.
	Naive bool
	// AuditRun, when set, is called with the ids of every regression run
	// during selection (tests check that no hidden test ever runs).
	AuditRun func(ids []string)
}

// Input is one task and its candidates, in input order.
type Input struct {
	Task  *task.Task
	Env   *env.Env
	Cands []reward.CandidateLine
	// Shuffle is each candidate's place in CWM's majority-voting shuffle
	// (the order its ties go by); nil is input order.
	Shuffle []int
}

// CandidateResult is one candidate's part in a selection.
type CandidateResult struct {
	Index  int    `json:"index"`
	Sample int    `json:"sample"`
	Tokens int64  `json:"tokens"`
	Empty  bool   `json:"empty"`
	Class  int    `json:"class"` // index of its class in the task's classes; -1 when empty
	Votes  int    `json:"votes"`
	Apply  string `json:"apply,omitempty"`
	// Generated lists the verdicts of the kept tests, in the order of
	// Result.Kept.
	Generated []Verdict `json:"generated,omitempty"`
	Scored    *Scored   `json:"scored,omitempty"`
	// PYes is the verifier's P(YES) for the candidate (for its class,
	// unless Config.VerifyEach), when it was asked.
	PYes *float64 `json:"p_yes,omitempty"`
	// Resolved is the hidden tests' verdict (with curves only).
	Resolved *bool `json:"resolved,omitempty"`
}

// Result is a task's selection.
type Result struct {
	Method Method `json:"method"`
	// MethodVersion is MethodVersions[Method].
	MethodVersion string `json:"method_version"`
	// Winner is the chosen candidate (-1: none, every patch is empty or
	// does not apply); Best and Majority are best@k's and majority@k's.
	Winner   int `json:"winner"`
	Best     int `json:"best"`
	Majority int `json:"majority"`
	// Hybrid is the hybrid pick (method hybrid only): of R2E-Gym's
	// finalists (HybridFinalists), the first in best@k's tie order;
	// BestVerifier is best-verifier's pick.
	Hybrid       *int   `json:"hybrid,omitempty"`
	BestVerifier *int   `json:"best_verifier,omitempty"`
	Why          string `json:"why"`
	// Classes counts the distinct non-empty normalised patches.
	Classes    int               `json:"classes"`
	Candidates []CandidateResult `json:"candidates"`
	// Tests are the generated tests; Kept the indexes of the ones used.
	Tests []GeneratedTest `json:"-"`
	// Prompt is the test-generation prompt the model was given.
	Prompt string `json:"-"`
	Kept   []int  `json:"kept"`
	// Reproducing, Irrelevant and Broken count the generated tests by
	// their verdict on the unpatched tree (reproduced; resolved; other or
	// no code).
	Reproducing int `json:"reproducing"`
	Irrelevant  int `json:"irrelevant"`
	Broken      int `json:"broken"`
	// Regression is the regression set: tests of RegressionSet's pool
	// (RegressionPool) passing on the unpatched tree, sampled to
	// Config.Regression; RegressionPool is how many passed there before
	// sampling.
	Regression     []string `json:"regression"`
	RegressionPool int      `json:"regression_pool"`
	RegressionSet  string   `json:"regression_set,omitempty"`
	// Counts is the selection's work; CurveCounts the work the curves
	// added (regression runs a subset needed that the selection did not;
	// the hidden-test gradings are not counted).
	Counts      Counts `json:"counts"`
	CurveCounts Counts `json:"curve_counts"`
	// Curve is the resolved rate over k (with curves only); Resolved
	// whether the winner is resolved.
	Curve    []Point `json:"curve,omitempty"`
	Resolved *bool   `json:"resolved,omitempty"`
	Seconds  float64 `json:"seconds"`
}

// Point is one k of a task's curve: the chance a pick of k candidates is
// resolved, by method.
type Point struct {
	K        int     `json:"k"`
	Pass     float64 `json:"pass"`
	Majority float64 `json:"majority"`
	Best     float64 `json:"best"`
	// Hybrid is R2E-Gym's hybrid, each subset counting the share of its
	// finalists that is resolved (R2E-Gym's expectation over ties);
	// BestVerifier is best-verifier's.
	Hybrid       *float64 `json:"hybrid,omitempty"`
	BestVerifier *float64 `json:"best_verifier,omitempty"`
	// Subsets is how many k-subsets the majority and best figures
	// average over (pass@k is the exact estimator).
	Subsets int `json:"subsets"`
}

// selection is one task's run.
type selection struct {
	cfg   Config
	in    Input
	tr    *trees
	cands []Candidate
	// rep is each class's representative patch (its first candidate's).
	rep      map[string]string
	applied  map[string]string    // class -> apply method ("failed" when it did not apply)
	passes   map[string][]bool    // class -> pass by generated test index
	verdicts map[string][]Verdict // class -> verdict by generated test index
	regIDs   []string
	reg      *regCache
	// repIndex is each class's representative candidate.
	repIndex map[string]int
	mu       sync.Mutex         // guards pyes
	pyes     map[string]float64 // the verifier's P(YES) by verifyKey
	// reproIdx are the indexes of the reproducing generated tests.
	reproIdx []int
}

// Select runs the selection of one task in sandboxes of sbs.
func Select(ctx context.Context, sbs *env.Sandboxes, cfg Config, in Input) (*Result, error) {
	start := time.Now()
	s := &selection{cfg: cfg, in: in, tr: &trees{sbs: sbs, e: in.Env, t: in.Task, ran: cfg.AuditRun},
		rep: map[string]string{}, repIndex: map[string]int{}, pyes: map[string]float64{}, applied: map[string]string{}, passes: map[string][]bool{}, verdicts: map[string][]Verdict{}}
	res := &Result{Method: cfg.Method, MethodVersion: MethodVersions[cfg.Method], Winner: -1, Best: -1, Majority: -1}
	var patches []string
	for _, c := range in.Cands {
		cl := Normalise(c.Patch)
		tok := c.Completion
		if tok <= 0 {
			tok = model.EstimateTokens(len(c.Patch))
		}
		s.cands = append(s.cands, Candidate{Class: cl, Tokens: tok})
		if cl != "" {
			if _, ok := s.rep[cl]; !ok {
				s.rep[cl], s.repIndex[cl] = c.Patch, len(s.cands)-1
			}
			patches = append(patches, c.Patch)
		}
	}
	all := make([]int, len(s.cands))
	for i := range all {
		all[i] = i
	}
	if cfg.Method == MethodMajority && !cfg.Curves {
		// majority@k alone needs no execution.
		res.Majority, res.Why = s.majority(all)
		res.Winner = res.Majority
		s.describe(res, picked{best: BestResult{Winner: -1}, majority: res.Majority})
		res.Seconds = time.Since(start).Seconds()
		return res, nil
	}
	if err := s.unpatchedPhase(ctx, res, patches); err != nil {
		return nil, err
	}
	s.reg = &regCache{s: s, runs: map[string]RegressionRun{}, limits: map[string]int{}}
	phase := s.candidatePhase
	if cfg.Naive {
		phase = s.naivePhase
	}
	if err := phase(ctx, res); err != nil {
		return nil, err
	}
	pick, err := s.pick(ctx, all)
	if err != nil {
		return nil, err
	}
	res.Kept, res.Best, res.Majority, res.Why = pick.kept, pick.best.Winner, pick.majority, pick.best.Why
	res.Winner = res.Best
	if cfg.Method.asksVerifier() {
		res.Winner = pick.verifier
		if cfg.Method == MethodHybrid {
			res.Hybrid = &pick.verifier
		} else {
			res.BestVerifier = &pick.verifier
		}
		if pick.verifier >= 0 {
			res.Why = pick.verifierWhy
		}
	}
	if cfg.Method == MethodMajority {
		res.Winner = res.Majority
		res.Why = pick.majorityWhy
	}
	s.describe(res, pick)
	res.Counts = s.tr.counts()
	if cfg.Curves {
		if err := s.curves(ctx, res); err != nil {
			return nil, err
		}
		res.CurveCounts = s.tr.counts()
		res.CurveCounts.Sub(res.Counts)
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// unpatchedPhase reads the touched files, finds the regression set, has
// the model write the tests and runs them on the unpatched tree.
func (s *selection) unpatchedPhase(ctx context.Context, res *Result, patches []string) error {
	sb, err := s.tr.unpatched(ctx)
	if err != nil {
		return err
	}
	defer sb.Close()
	var files []File
	for _, name := range touchedFiles(patches) {
		b, err := sb.ReadFile(ctx, sb.Config().Workdir+"/"+name, fileLimit)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a file the candidates create
		}
		if err != nil && len(b) == 0 {
			return fmt.Errorf("read %s: %w", name, err)
		}
		files = append(files, File{Path: name, Content: string(b)})
	}
	// The regression pool, run once on the unpatched tree.
	res.RegressionSet = s.cfg.RegressionSet
	if res.RegressionSet == "" {
		res.RegressionSet = RegressionExisting
	}
	pool := RegressionPool(s.in.Env.Passing(), s.in.Task, res.RegressionSet)
	if len(pool) > 0 {
		passed, _, err := s.tr.runTests(ctx, sb, pool, 0)
		if err != nil {
			return err
		}
		for _, id := range pool {
			if passed[id] {
				s.regIDs = append(s.regIDs, id)
			}
		}
	}
	res.RegressionPool = len(s.regIDs)
	s.regIDs = sample(s.regIDs, s.cfg.Regression, s.in.Task.InstanceID)
	res.Regression = s.regIDs

	var tests []GeneratedTest
	if s.cfg.Testgen == TestgenAgent {
		res.Prompt = testgenInstruction
		tests, err = s.agentTests(ctx)
	} else {
		if res.Prompt, err = Prompt(s.in.Task, files); err != nil {
			return err
		}
		tests, err = Generate(ctx, s.cfg.Client, res.Prompt, s.cfg.Tests)
	}
	if err != nil {
		return err
	}
	verdicts, details, err := s.tr.runGenerated(ctx, sb, tests)
	if err != nil {
		return err
	}
	for i := range tests {
		g := &tests[i]
		switch {
		case g.Code == "":
			g.Unpatched, g.Dropped = NoCode, "broken: the reply holds no code block"
			if g.Reply != "" && s.cfg.Testgen == TestgenAgent {
				g.Dropped = "broken: " + g.Reply
			}
			res.Broken++
		case s.cfg.Testgen == TestgenAgent && cwmTestFilter(g.Code) != "":
			g.Unpatched, g.Detail = Other, cwmTestFilter(g.Code)
			g.Dropped = "broken: " + g.Detail
			res.Broken++
		case verdicts[i] == Reproduced:
			g.Unpatched = Reproduced
			res.Reproducing++
			s.reproIdx = append(s.reproIdx, i)
		case verdicts[i] == Resolved:
			g.Unpatched, g.Dropped = Resolved, "irrelevant: prints Issue resolved on the unpatched tree, so it does not reproduce the issue"
			res.Irrelevant++
		default:
			g.Unpatched, g.Detail, g.Dropped = Other, details[i], "broken: "+details[i]
			res.Broken++
		}
	}
	res.Tests = tests
	return nil
}

// sample keeps n of ids (all when n <= 0 or n >= len), drawn with a seed
// from key, in their original order.
func sample(ids []string, n int, key string) []string {
	if n <= 0 || n >= len(ids) {
		return ids
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	idx := rand.New(rand.NewPCG(h.Sum64(), 0)).Perm(len(ids))[:n]
	sort.Ints(idx)
	out := make([]string, n)
	for i, j := range idx {
		out[i] = ids[j]
	}
	return out
}

// candidatePhase runs the reproducing tests on each class's
// representative, in a fresh sandbox each.
func (s *selection) candidatePhase(ctx context.Context, res *Result) error {
	var repro []GeneratedTest
	for _, g := range res.Tests {
		if g.Reproduces() {
			repro = append(repro, g)
		}
	}
	classes := make([]string, 0, len(s.rep))
	for cl := range s.rep {
		classes = append(classes, cl)
	}
	sort.Strings(classes)
	for _, cl := range classes {
		sb, how, err := s.tr.patched(ctx, s.rep[cl])
		if err != nil {
			return err
		}
		s.applied[cl] = string(how)
		if sb == nil {
			continue
		}
		verdicts, _, err := s.tr.runGenerated(ctx, sb, repro)
		sb.Close()
		if err != nil {
			return err
		}
		p, v := make([]bool, len(res.Tests)), make([]Verdict, len(res.Tests))
		for i, verdict := range verdicts {
			p[i], v[i] = verdict == Resolved, verdict
		}
		s.passes[cl], s.verdicts[cl] = p, v
	}
	return nil
}

// picked is the outcome of the picks on a subset of the candidates.
type picked struct {
	kept        []int
	best        BestResult
	majority    int
	majorityWhy string
	// verifier is the pick of hybrid or best-verifier (-1 for the other
	// methods, or no pick), verifierWhy why; finalists are hybrid's
	// (indexes into s.cands).
	verifier    int
	verifierWhy string
	finalists   []int
}

// pick runs majority@k and best@k on the candidates idx (indexes into
// s.cands); winners are indexes into s.cands.
func (s *selection) pick(ctx context.Context, idx []int) (picked, error) {
	cands := make([]Candidate, len(idx))
	eligible := make([]bool, len(idx))
	for j, i := range idx {
		cands[j] = s.cands[i]
		cl := cands[j].Class
		eligible[j] = cl != "" && s.applied[cl] != string(reward.ApplyFailed)
	}
	kept := KeepTests(cands, eligible, s.passes, s.reproIdx, s.cfg.Keep)
	best, err := Best(ctx, BestInput{Cands: cands, Eligible: eligible, Generated: GeneratedScores(s.passes, kept),
		RegressionSize: len(s.regIDs), Run: s.reg.run, Exhaustive: s.cfg.Naive})
	if err != nil {
		return picked{}, err
	}
	p := picked{kept: kept, best: best, verifier: -1}
	p.majority, p.majorityWhy = s.majority(idx)
	switch s.cfg.Method {
	case MethodHybrid:
		p.verifier, p.finalists, p.verifierWhy, err = s.hybrid(ctx, cands, eligible, GeneratedScores(s.passes, kept), idx)
	case MethodBestVerifier:
		p.verifier, p.verifierWhy, err = s.bestVerifier(ctx, cands, eligible, best, idx)
	}
	if err != nil {
		return picked{}, err
	}
	if p.verifier >= 0 {
		p.verifier = idx[p.verifier]
	}
	if best.Winner >= 0 {
		p.best.Winner = idx[best.Winner]
	}
	return p, nil
}

// regCache runs the regression set once per class, again only when a
// pick needs more of it than an earlier run gave (a run stopped at a
// lower failure limit).
type regCache struct {
	s      *selection
	mu     sync.Mutex
	runs   map[string]RegressionRun
	limits map[string]int // the maxFail of a stopped run
}

func (c *regCache) run(ctx context.Context, class string, maxFail int) (RegressionRun, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.runs[class]; ok {
		if r.Complete || maxFail > 0 && maxFail <= c.limits[class] {
			return r, nil
		}
	}
	sb, how, err := c.s.tr.patched(ctx, c.s.rep[class])
	if err != nil {
		return RegressionRun{}, err
	}
	if sb == nil {
		return RegressionRun{}, fmt.Errorf("the patch of a class applied once and not again (%s)", how)
	}
	defer sb.Close()
	passed, stopped, err := c.s.tr.runTests(ctx, sb, c.s.regIDs, maxFail)
	if err != nil {
		return RegressionRun{}, err
	}
	r := RegressionRun{Passed: len(passed), Complete: !stopped}
	c.runs[class], c.limits[class] = r, maxFail
	return r, nil
}

// majority is majority@k on the candidates s.cands[idx]: the winner (an
// index into s.cands, -1 when every patch is empty) and why.
func (s *selection) majority(idx []int) (int, string) {
	if s.cfg.Majority == GroupNormalised {
		cands := make([]Candidate, len(idx))
		for j, i := range idx {
			cands[j] = s.cands[i]
		}
		w := Majority(cands)
		if w < 0 {
			return -1, ""
		}
		return idx[w], fmt.Sprintf("majority vote: %d of %d candidates share its normalised patch", Votes(cands)[cands[w].Class], len(cands))
	}
	// CWM's: in the order of its shuffle.
	order := append([]int{}, idx...)
	if s.in.Shuffle != nil {
		sort.SliceStable(order, func(a, b int) bool { return s.in.Shuffle[order[a]] < s.in.Shuffle[order[b]] })
	}
	patches := make([]string, len(order))
	for j, i := range order {
		patches[j] = s.in.Cands[i].Patch
	}
	w, votes := MajorityExact(patches)
	if w < 0 {
		return -1, ""
	}
	return order[w], majorityExactWhy(len(idx), votes)
}
