package tracer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
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
	// PerFunction, when positive, keeps at most that many episodes per
	// function: every episode goes to Out.spool first, then a sample
	// (seeded by Episode.Seed) goes to Out.
	PerFunction int
	Episode     EpisodeOptions
	Repo        RepoOptions
	// Shard takes the tests whose id falls in it (default all).
	Shard    shard.Shard
	Progress io.Writer
}

// RepoSummary is what a trace repo run wrote.
type RepoSummary struct {
	// Episodes counts the episodes written, by status; Functions the
	// functions that are the root of a complete one.
	Episodes  map[Status]int
	Functions int
	// Tests is how many tests the run concerned, Skipped those whose
	// episodes were all written before.
	Tests, Skipped int
	// Failing are the tests that did not pass while traced; Unrecorded
	// counts those with no recording.
	Failing    []string
	Unrecorded int
	// Kept is how many episodes the per-function cap wrote to Out.
	Kept    int
	Seconds float64

	out         string
	perFunction int
}

// TraceRepo records the tests of opts.Env in sandboxes of sbs and writes
// their episodes. A test that could not be recorded, or did not pass while
// traced, is reported in the summary, not an error.
func TraceRepo(ctx context.Context, sbs *env.Sandboxes, opts RepoRunOptions) (*RepoSummary, error) {
	start := time.Now()
	e := opts.Env
	if !e.Usable {
		return nil, errkind.Errorf(errkind.Input, "environment %s is not usable: %s", e.ID, e.Reason)
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
	// With a cap per function, every episode goes to the spool first: the
	// choice needs all of a function's episodes.
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
		out: opts.Out, perFunction: opts.PerFunction}
	if len(todo) > 0 {
		if err := traceInto(ctx, sbs, opts, st, todo, target, sum); err != nil {
			return nil, err
		}
	}
	if opts.PerFunction > 0 {
		if sum.Kept, err = sampleSpool(target, opts.Out, opts.PerFunction, opts.Episode.Seed); err != nil {
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
// ids, and per test how many lines it has and how many it should have.
type episodeState struct {
	ids   map[string]bool
	lines map[string]int
	want  map[string]int
}

func readEpisodeState(file string) (*episodeState, error) {
	st := &episodeState{ids: map[string]bool{}, lines: map[string]int{}, want: map[string]int{}}
	err := jsonl.Scan(file, func(_ int, line []byte) error {
		var ep struct {
			ID    string `json:"id"`
			Test  string `json:"test"`
			Stats struct {
				TestEpisodes int `json:"test_episodes"`
			} `json:"stats"`
		}
		if err := json.Unmarshal(line, &ep); err != nil || ep.ID == "" {
			return fmt.Errorf("not an episode line: %v", err)
		}
		st.ids[ep.ID] = true
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

// traceInto records the tests todo and writes their episodes to target.
// Sources are read from a sandbox of their own, never changed.
func traceInto(ctx context.Context, sbs *env.Sandboxes, opts RepoRunOptions, st *episodeState, todo []string, target string, sum *RepoSummary) error {
	w, err := jsonl.Append(target)
	if err != nil {
		return err
	}
	defer w.Close()
	var bar *progress.Bar
	if opts.Progress != nil {
		bar = progress.New(opts.Progress, "trace repo", len(todo))
	}
	defer bar.Done()
	src, err := sbs.Open(ctx, opts.Env)
	if err != nil {
		return err
	}
	defer src.Close()
	eopts := opts.Episode
	eopts.Source = func(rel string) ([]byte, error) {
		return src.ReadFile(ctx, path.Join(env.RepoRoot, rel), int64(maxSourceBytes))
	}
	functions := map[Code]bool{}
	err = TraceTests(ctx, sbs, opts.Env, todo, opts.Repo, func(r *RawTest) error {
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
		for _, ep := range eps {
			if st.ids[ep.ID] {
				continue // written by an interrupted run
			}
			if err := w.Write(ep); err != nil {
				return fmt.Errorf("write %s: %w", target, err)
			}
			sum.Episodes[ep.Status]++
			bar.Count(string(ep.Status))
			if ep.Status.Complete() {
				functions[ep.Function] = true
			}
		}
		return nil
	})
	sum.Functions = len(functions)
	return err
}

// maxSourceBytes bounds a source file read for an episode's context.
const maxSourceBytes = 64 << 20

// sampleSpool writes at most perFunction episodes per function from the
// spool to out, in the spool's order, then removes the spool. Ids already
// in out are skipped, so this step resumes too.
func sampleSpool(spool, out string, perFunction int, seed int64) (int, error) {
	var refs []EpisodeRef
	err := jsonl.Scan(spool, func(_ int, line []byte) error {
		var r struct {
			ID       string `json:"id"`
			Function Code   `json:"function"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		refs = append(refs, EpisodeRef{ID: r.ID, Function: r.Function})
		return nil
	})
	if err != nil {
		return 0, err
	}
	keep := Sample(refs, perFunction, seed)
	done, err := jsonl.Keys(out, jsonl.Field("id"))
	if err != nil {
		return 0, fmt.Errorf("cannot resume: %w", err)
	}
	w, err := jsonl.Append(out)
	if err != nil {
		return 0, err
	}
	defer w.Close()
	written := 0
	err = jsonl.Scan(spool, func(_ int, line []byte) error {
		var r struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if !keep[r.ID] || done[r.ID] {
			return nil
		}
		written++
		return w.WriteRaw(line)
	})
	if err != nil {
		return 0, fmt.Errorf("write %s from %s: %w", out, spool, err)
	}
	if err := w.Close(); err != nil {
		return 0, err
	}
	return written, os.Remove(spool)
}

// Write prints the summary for people.
func (s *RepoSummary) Write(w io.Writer) {
	total := 0
	counts := map[string]int{}
	for st, n := range s.Episodes {
		total += n
		counts[string(st)] = n
	}
	where := s.out
	if s.perFunction > 0 {
		where += ".spool"
	}
	fmt.Fprintf(w, "%d episodes to %s from %d tests in %.1fs: %s; %d functions are the root of a complete episode\n",
		total, where, s.Tests-s.Skipped, s.Seconds, batch.FormatCounts(counts), s.Functions)
	if s.Unrecorded > 0 {
		fmt.Fprintf(w, "%d tests could not be recorded (status error, id TEST#error)\n", s.Unrecorded)
	}
	if len(s.Failing) > 0 {
		fmt.Fprintf(w, "%d tests did not pass while traced (their episodes are kept): %s\n",
			len(s.Failing), strings.Join(s.Failing[:min(5, len(s.Failing))], ", "))
	}
	if s.Skipped > 0 {
		fmt.Fprintf(w, "skipped %d tests whose episodes are already in the output\n", s.Skipped)
	}
	if s.perFunction > 0 {
		fmt.Fprintf(w, "wrote %d episodes to %s (at most %d per function)\n", s.Kept, s.out, s.perFunction)
	}
}
