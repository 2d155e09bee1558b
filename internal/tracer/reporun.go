package tracer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cwm/internal/batch"
	"cwm/internal/env"
	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/progress"
	"cwm/internal/shard"
	"cwm/internal/testrun"
)

// RepoRunOptions configure a trace repo run: a repository's passing tests
// recorded and cut into function-level episodes.
type RepoRunOptions struct {
	// Env is the environment whose tests are traced.
	Env *env.Env
	// Tests, when set, keeps the passing tests whose id matches it (a
	// glob, or else a substring).
	Tests string
	// Out is the episodes file (JSONL), appended to and resumed: tests
	// whose episodes are all in it are skipped.
	Out string
	// PerFunction, when positive, keeps at most that many complete
	// episodes per function (cwm trace repo's default is
	// DefaultPerFunction): the episodes that can still be chosen go to
	// Out.spool first (the others as a stub without frames, text or
	// context), then a sample (seeded by Episode.Seed) goes to Out. The
	// other episodes (too_long, timeout, error) are all written.
	PerFunction int
	// MaxTotalBytes and MaxEpisodes cap what the run's file (Out, or the
	// spool) holds, what earlier runs wrote to it included
	// (DefaultMaxTotalBytes, DefaultMaxEpisodes when zero). An episode
	// that would pass one is not written, and the run takes no more tests.
	MaxTotalBytes int64
	MaxEpisodes   int
	Episode       EpisodeOptions
	Repo          RepoOptions
	// Shard takes the tests whose id falls in it (default all).
	Shard    shard.Shard
	Progress io.Writer
}

// The total caps of a trace repo run when RepoRunOptions leaves them zero.
const (
	DefaultMaxTotalBytes = 1 << 30
	DefaultMaxEpisodes   = 100000
)

// DefaultPerFunction is cwm trace repo's cap of episodes per function. On
// a web framework's suite (docs/benchmarks.md, "Repository traces of a
// whole suite") 61% of all episodes repeat another episode's text of the
// same function, a few functions (context managers, properties run by
// every request) have thousands, and the median function has 18 or 19: with 32,
// 59% of the functions keep every episode and the output is 18% of
// everything's bytes.
const DefaultPerFunction = 32

// TraceRepo records the tests of opts.Env in sandboxes of sbs and writes
// their episodes. A test that could not be recorded, or did not pass while
// traced, is reported in the summary, not an error.
func TraceRepo(ctx context.Context, sbs *env.Sandboxes, opts RepoRunOptions) (*RepoSummary, error) {
	start := time.Now()
	e := opts.Env
	if opts.MaxTotalBytes <= 0 {
		opts.MaxTotalBytes = DefaultMaxTotalBytes
	}
	if opts.MaxEpisodes <= 0 {
		opts.MaxEpisodes = DefaultMaxEpisodes
	}
	if opts.Repo.MaxBytes <= 0 {
		// A test's recording needs no more text than the whole run keeps.
		opts.Repo.MaxBytes = int(min(int64(TestCaps.MaxBytes), opts.MaxTotalBytes))
	}
	if !e.Usable {
		return nil, errkind.Errorf(errkind.Input, "environment %s is not usable: %s", e.ID, e.Reason)
	}
	// The repository is where the environment has it (an imported
	// image's working directory, or /repo).
	if opts.Repo.Root == "" {
		opts.Repo.Root = e.RepoDir()
	}
	if opts.Episode.Root == "" {
		opts.Episode.Root = e.RepoDir()
	}
	if err := CheckPython(e); err != nil {
		return nil, err
	}
	tests, err := MatchTests(e.Passing(), opts.Tests)
	if err != nil {
		return nil, err
	}
	var mine []string
	for _, id := range tests {
		if opts.Shard.Has(id) {
			mine = append(mine, id)
		}
	}
	// With a cap per function, episodes go to the spool first: the
	// choice needs all of a function's episodes (see sampleFront).
	target := opts.Out
	if opts.PerFunction > 0 {
		target = opts.Out + ".spool"
	}
	st, err := readEpisodeState(target)
	if err != nil {
		return nil, err
	}
	var todo []string
	for _, id := range mine {
		if !st.complete(id) {
			todo = append(todo, id)
		}
	}
	sum := &RepoSummary{Episodes: map[Status]int{}, Tests: len(mine), Skipped: len(mine) - len(todo),
		Out: opts.Out, PerFunction: max(opts.PerFunction, 0), Failing: []string{}}
	sum.FileBytes = st.bytes
	if len(todo) > 0 {
		if err := traceInto(ctx, sbs, opts, st, todo, target, sum); err != nil {
			return nil, err
		}
	}
	if opts.PerFunction > 0 {
		if err := sampleSpool(target, opts.Out, opts.PerFunction, opts.Episode.Seed, sum); err != nil {
			return nil, err
		}
	}
	sum.Seconds = time.Since(start).Seconds()
	return sum, nil
}

// MatchTests keeps the ids matching pattern: a glob if it has glob
// characters (tests/test_a.py::*), otherwise a substring. A bad glob is an
// error of kind errkind.Usage.
func MatchTests(ids []string, pattern string) ([]string, error) {
	if len(ids) == 0 {
		return nil, errkind.New(errkind.Input, "the environment has no passing tests")
	}
	if pattern == "" {
		return ids, nil
	}
	glob := strings.ContainsAny(pattern, "*?[")
	if glob {
		if _, err := path.Match(pattern, ""); err != nil {
			return nil, errkind.Errorf(errkind.Usage, "--tests %q: %v", pattern, err)
		}
	}
	var out []string
	for _, id := range ids {
		ok := strings.Contains(id, pattern)
		if glob {
			ok, _ = path.Match(pattern, id)
		}
		if ok {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return nil, errkind.Errorf(errkind.Input, "no passing test matches %q", pattern)
	}
	return out, nil
}

// episodeState is what a previous run left in the output: the episode
// ids and functions, per test how many lines it has and how many it should
// have, and the file's size.
type episodeState struct {
	ids   map[string]bool
	refs  []EpisodeRef
	lines map[string]int
	want  map[string]int
	bytes int64
}

func readEpisodeState(file string) (*episodeState, error) {
	st := &episodeState{ids: map[string]bool{}, lines: map[string]int{}, want: map[string]int{}}
	err := jsonl.Scan(file, func(_ int, line []byte) error {
		var ep struct {
			ID       string `json:"id"`
			Test     string `json:"test"`
			Function Code   `json:"function"`
			Status   Status `json:"status"`
			Stats    struct {
				TestEpisodes int `json:"test_episodes"`
			} `json:"stats"`
		}
		if err := json.Unmarshal(line, &ep); err != nil || ep.ID == "" {
			return fmt.Errorf("not an episode line: %v", err)
		}
		st.ids[ep.ID] = true
		if ep.Status.Complete() {
			st.refs = append(st.refs, EpisodeRef{ID: ep.ID, Function: ep.Function})
		}
		st.bytes += int64(len(line)) + 1
		st.lines[ep.Test]++
		st.want[ep.Test] = ep.Stats.TestEpisodes
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot resume: %w", err)
	}
	return st, nil
}

// complete reports whether all of a test's episodes are written. A test
// that reached no repository code has no line and is traced again.
func (st *episodeState) complete(test string) bool {
	n := st.lines[test]
	return n > 0 && n >= st.want[test]
}

// traceInto records the tests todo and writes their episodes to target,
// up to the total caps. Sources are read from a sandbox of their own,
// never changed. It runs on batch.RunStage: an item is a batch of tests
// recorded in one sandbox, written in the order of the batches; once a
// cap is reached no batch is taken and none is written.
func traceInto(ctx context.Context, sbs *env.Sandboxes, opts RepoRunOptions, st *episodeState, todo []string, target string, sum *RepoSummary) error {
	prog := startProgress(opts, todo, sum)
	bar := prog.bar
	defer prog.stop()
	src, err := sbs.Open(ctx, opts.Env)
	if err != nil {
		return err
	}
	defer src.Close()
	eopts := opts.Episode
	if eopts.Context == "" {
		eopts.Context = ContextDefs
	}
	eopts.Source = func(rel string) ([]byte, error) {
		return src.ReadFile(ctx, path.Join(opts.Repo.Root, rel), int64(maxSourceBytes))
	}
	var front *sampleFront
	if opts.PerFunction > 0 {
		front = newSampleFront(opts.PerFunction, opts.Episode.Seed)
		for _, r := range st.refs {
			front.Admit(r.Function, r.ID)
		}
	}
	episodes := len(st.ids)
	functions := map[Code]bool{}
	var capped atomic.Bool
	ropts := opts.Repo.withDefaults()
	if ropts.PythonVersion == "" {
		ropts.PythonVersion = opts.Env.Python
	}
	// writeTest writes the episodes of one test, or sets sum.Capped at
	// the first that would pass a total cap.
	writeTest := func(w *jsonl.Writer, r *RawTest) error {
		defer bar.Add(1)
		if r.Outcome != "" && r.Outcome != testrun.Pass {
			sum.Failing = append(sum.Failing, r.Test)
		}
		eps := Cut(r, eopts)
		if len(eps) == 0 && r.Status == Error {
			// Nothing recorded: the test's line says why (a result, not
			// a failure of the run).
			sum.Unrecorded++
			eps = []Episode{{ID: r.Test + "#error", Test: r.Test, Status: Error, Error: r.Error,
				Stats: EpisodeStats{TestEpisodes: 1}}}
		}
		for i, ep := range eps {
			if st.ids[ep.ID] {
				continue // written by an interrupted run
			}
			sum.Seen++
			if front != nil && ep.Status.Complete() && !front.Admit(ep.Function, ep.ID) {
				ep.strip() // never chosen: a stub keeps the count for resuming
			}
			if ep.dropped != "" {
				// Over an episode's cap: the line says so, without the
				// trace, which CWM's data leaves out and which would fill
				// the total cap with episodes no trainer reads.
				ep.strip()
			}
			line, err := json.Marshal(ep)
			if err != nil {
				return fmt.Errorf("write %s: %w", target, err)
			}
			switch {
			case episodes >= opts.MaxEpisodes:
				sum.Capped = fmt.Sprintf("%d episodes (--max-episodes)", opts.MaxEpisodes)
			case sum.FileBytes+int64(len(line))+1 > opts.MaxTotalBytes:
				sum.Capped = fmt.Sprintf("%d bytes (--max-total-bytes)", opts.MaxTotalBytes)
			}
			if sum.Capped != "" {
				capped.Store(true)
				left := 1
				for _, rest := range eps[i+1:] {
					if !st.ids[rest.ID] {
						left++
					}
				}
				sum.Seen += left - 1
				sum.Dropped.TotalCap += left
				return nil
			}
			if err := w.WriteRaw(line); err != nil {
				return fmt.Errorf("write %s: %w", target, err)
			}
			episodes++
			sum.FileBytes += int64(len(line)) + 1
			sum.Dropped.add(ep.dropped)
			if front == nil {
				sum.Written++
				sum.Bytes += int64(len(line)) + 1
				sum.Episodes[ep.Status]++
			}
			bar.Count(string(ep.Status))
			if ep.Status.Complete() {
				functions[ep.Function] = true
			}
		}
		return nil
	}
	batches := testBatches(opts.Env, todo, ropts)
	_, err = batch.RunStage(ctx, batch.Job[[]string, []*RawTest]{
		Stage: &RepoStage, Plan: &batch.Plan[[]string]{Mine: batches, Todo: batches},
		Out: target, Unmarked: true, Workers: ropts.Workers, InOrder: true,
		Admit: func([]string, int) batch.Admission {
			if capped.Load() {
				return batch.Stop
			}
			return batch.Take
		},
		Do: func(ctx context.Context, _ int, ids []string) ([]*RawTest, error) {
			prog.started(ids)
			return runBatch(ctx, sbs, opts.Env, ids, ropts)
		},
		Write: func(w *jsonl.Writer, _ []string, tests []*RawTest, err error) (string, error) {
			if err != nil {
				return "", err
			}
			for _, t := range tests {
				if capped.Load() {
					return "", nil // a batch that was running at the cap
				}
				if err := writeTest(w, t); err != nil {
					return "", err
				}
				if !capped.Load() {
					sum.Traced++
				}
			}
			return "", nil
		},
	})
	sum.Functions = len(functions)
	if capped.Load() {
		// The test cut short by the cap is not traced either: a rerun
		// with a larger cap writes the rest of it.
		sum.NotTraced = len(todo) - sum.Traced
	}
	return err
}

// repoProgress reports a trace repo run on opts.Progress: a line when it
// starts and when each batch of tests begins, and the bar, drawn every
// few seconds even while no test finishes.
type repoProgress struct {
	bar     *progress.Bar
	w       io.Writer
	mu      sync.Mutex
	begun   int
	total   int
	ticking chan struct{}
	wg      sync.WaitGroup
}

func startProgress(opts RepoRunOptions, todo []string, sum *RepoSummary) *repoProgress {
	p := &repoProgress{total: len(todo)}
	if opts.Progress == nil {
		return p
	}
	p.w = opts.Progress
	fmt.Fprintf(p.w, "trace repo: %d tests to trace (%d skipped), %d workers; total caps %d bytes, %d episodes\n",
		len(todo), sum.Skipped, max(opts.Repo.Workers, 1), opts.MaxTotalBytes, opts.MaxEpisodes)
	p.bar = progress.New(opts.Progress, "trace repo", len(todo))
	p.ticking = make(chan struct{})
	p.wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-p.ticking:
				return
			case <-t.C:
				p.bar.Add(0) // a line when one is due, tests finished or not
			}
		}
	})
	return p
}

// started prints the line of a batch that begins.
func (p *repoProgress) started(ids []string) {
	if p.w == nil || len(ids) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "trace repo: tests %d-%d of %d begin (%s ...)\n", p.begun+1, p.begun+len(ids), p.total, ids[0])
	p.begun += len(ids)
}

func (p *repoProgress) stop() {
	if p.ticking != nil {
		close(p.ticking)
		p.wg.Wait()
	}
	p.bar.Done()
}

// maxSourceBytes bounds a source file read for an episode's context.
const maxSourceBytes = 64 << 20

// sampleSpool writes from the spool to out every episode that is not
// complete and at most perFunction complete ones per function, in the
// spool's order, then removes the spool; it counts in sum what out holds
// from the spool and what the cap left out. Ids already in out are not
// written again, so this step resumes too.
func sampleSpool(spool, out string, perFunction int, seed int64, sum *RepoSummary) error {
	type spooled struct {
		ID       string `json:"id"`
		Function Code   `json:"function"`
		Status   Status `json:"status"`
	}
	var refs []EpisodeRef
	lines := 0
	err := jsonl.Scan(spool, func(_ int, line []byte) error {
		var r spooled
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		lines++
		if r.Status.Complete() {
			refs = append(refs, EpisodeRef{ID: r.ID, Function: r.Function})
		}
		return nil
	})
	if err != nil {
		return err
	}
	keep := Sample(refs, perFunction, seed)
	done, err := jsonl.Keys(out, jsonl.Field("id"))
	if err != nil {
		return fmt.Errorf("cannot resume: %w", err)
	}
	w, err := jsonl.Append(out)
	if err != nil {
		return err
	}
	defer w.Close()
	sum.Seen = lines + sum.Dropped.TotalCap
	err = jsonl.Scan(spool, func(_ int, line []byte) error {
		var r spooled
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if r.Status.Complete() && !keep[r.ID] {
			sum.Dropped.FunctionCap++
			return nil
		}
		sum.Written++
		sum.Episodes[r.Status]++
		if done[r.ID] {
			return nil
		}
		sum.Bytes += int64(len(line)) + 1
		return w.WriteRaw(line)
	})
	if err != nil {
		return fmt.Errorf("write %s from %s: %w", out, spool, err)
	}
	if err := w.Close(); err != nil {
		return err
	}
	return os.Remove(spool)
}
