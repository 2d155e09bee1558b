package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/jsonl"
	"cwm/internal/progress"
	"cwm/internal/testrun"
	"cwm/internal/tracer"
)

type traceRepoCmd struct {
	env, out, tests string
	maxDepth        int
	stepIn          float64
	seed            int64
	perFunction     int
	workers         int
	timeout         time.Duration
	maxEvents       int
	maxBytes        command.ByteSize
	maxRepr         int
	maxTestEvents   int
}

func (*traceRepoCmd) Name() string { return "trace repo" }
func (*traceRepoCmd) Synopsis() string {
	return "trace a repository's tests and cut function-level episodes"
}
func (*traceRepoCmd) Usage() string {
	return `--env ID --out TRACES.jsonl [flags]
Runs the environment's passing tests (those passing in every baseline run)
with the tracer installed around each test, recording the calls of the
repository's own code (not the tests, not installed packages), and cuts
each test's recording into function-level episodes (CWM-SPEC 1.5): every
call of a repository function is a candidate root; a callee within
--max-depth of the root is inlined with probability --step-in, otherwise
it is stepped over and becomes an episode of its own. Each episode is a
complete CWM trace whose context is the source of the root's module (and
of any other module its inlined calls run), the def line marked.

An output line has the fields of cwm trace func (id, status, context,
codes, frames, text, output, error, stats) and the test and the function
the episode came from. See docs/traces.md, "Repository traces".

The same --seed gives the same episodes. The run is resumable: tests whose
episodes are all in TRACES.jsonl are skipped. With
--max-episodes-per-function, episodes are first collected in
TRACES.jsonl.spool, then at most N per function are written.

Examples:
  cwm trace repo --env textkit --out episodes.jsonl
  cwm trace repo --env textkit --out e.jsonl --tests test_distance --step-in 0 --seed 3`
}

func (c *traceRepoCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.env, "env", "", "environment `ID` or name (cwm env ls)")
	fs.StringVar(&c.out, "out", "", "output `FILE` of episodes (JSON lines, appended)")
	fs.StringVar(&c.tests, "tests", "", "only tests whose id matches `PATTERN` (a glob, or else a substring)")
	fs.IntVar(&c.maxDepth, "max-depth", 2, "deepest callee inlined into an episode (the root is 0)")
	fs.Float64Var(&c.stepIn, "step-in", 0.5, "probability that a callee within --max-depth is inlined")
	fs.Int64Var(&c.seed, "seed", 0, "seed of the step-in choices and of --max-episodes-per-function")
	fs.IntVar(&c.perFunction, "max-episodes-per-function", 0, "keep at most `N` episodes per function (0: all)")
	fs.IntVar(&c.workers, "workers", runtime.NumCPU(), "test runs at a time, each in its own sandbox")
	fs.DurationVar(&c.timeout, "timeout", time.Minute, "recording time of one test; past it the test runs on untraced")
	fs.IntVar(&c.maxEvents, "max-events", tracer.TraceCaps.MaxEvents, "line events per episode (past it: status too_long)")
	c.maxBytes = command.ByteSize(tracer.TraceCaps.MaxBytes)
	fs.Var(&c.maxBytes, "max-bytes", "trace text `BYTES` per episode (past it: status too_long)")
	fs.IntVar(&c.maxRepr, "max-repr", tracer.TestCaps.MaxRepr, "characters of one value's text before it is truncated")
	fs.IntVar(&c.maxTestEvents, "max-test-events", tracer.TestCaps.MaxEvents, "line events recorded per test (past it: the rest of the test is not recorded)")
}

func (c *traceRepoCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	switch {
	case len(args) > 0:
		return command.Usagef("unexpected arguments %q", args)
	case c.env == "" || c.out == "":
		return command.Usagef("--env and --out are required")
	case c.maxDepth < 0 || c.stepIn < 0 || c.stepIn > 1 || c.perFunction < 0:
		return command.Usagef("--max-depth and --max-episodes-per-function must not be negative, --step-in between 0 and 1")
	case c.workers <= 0 || c.timeout <= 0 || c.maxEvents <= 0 || c.maxBytes <= 0 || c.maxRepr < 64 || c.maxTestEvents <= 0:
		return command.Usagef("--workers, --timeout, --max-events, --max-bytes, --max-test-events must be positive, --max-repr at least 64")
	}
	en, err := resolveEnv(e, c.env)
	if err != nil {
		return err
	}
	if !en.Usable {
		return fmt.Errorf("environment %s is not usable: %s", en.ID, en.Reason)
	}
	tests, err := matchTests(en.Passing(), c.tests)
	if err != nil {
		return err
	}
	// With a cap per function, every episode goes to the spool first: the
	// choice needs all of a function's episodes.
	target := c.out
	if c.perFunction > 0 {
		target = c.out + ".spool"
	}
	st, err := readEpisodeState(target)
	if err != nil {
		return err
	}
	var todo []string
	for _, id := range tests {
		if !st.complete(id) {
			todo = append(todo, id)
		}
	}
	start := time.Now()
	s := &repoRun{cmd: c, st: st, counts: map[tracer.Status]int{}, functions: map[tracer.Code]bool{}}
	if len(todo) > 0 {
		if err := s.trace(ctx, e, en, todo, target); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted; run the same command again to resume: %w", ctx.Err())
			}
			return err
		}
	}
	if c.perFunction > 0 {
		if s.kept, err = c.sample(target); err != nil {
			return err
		}
	}
	s.summary(e.Stderr, len(tests), len(tests)-len(todo), time.Since(start))
	return nil
}

// matchTests keeps the ids matching pattern: a glob if it has glob
// characters (tests/test_a.py::*), otherwise a substring.
func matchTests(ids []string, pattern string) ([]string, error) {
	if len(ids) == 0 {
		return nil, errors.New("the environment has no passing tests")
	}
	if pattern == "" {
		return ids, nil
	}
	glob := strings.ContainsAny(pattern, "*?[")
	if glob {
		if _, err := path.Match(pattern, ""); err != nil {
			return nil, command.Usagef("--tests %q: %v", pattern, err)
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
		return nil, fmt.Errorf("no passing test matches %q", pattern)
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

// repoRun is one run of the command.
type repoRun struct {
	cmd        *traceRepoCmd
	st         *episodeState
	w          *jsonl.Writer
	bar        *progress.Bar
	counts     map[tracer.Status]int
	functions  map[tracer.Code]bool // roots of complete episodes
	failing    []string             // tests that did not pass while traced
	unrecorded int                  // tests with no recording
	kept       int                  // episodes written by sample
}

func (s *repoRun) trace(ctx context.Context, e *command.Env, en *env.Env, todo []string, target string) error {
	c := s.cmd
	w, err := jsonl.Append(target)
	if err != nil {
		return err
	}
	defer w.Close()
	s.w = w
	sbs, closeRT, err := openSandboxes(e, -1)
	if err != nil {
		return err
	}
	defer closeRT()
	s.bar = progress.New(e.Stderr, "trace repo", len(todo))
	defer s.bar.Done()
	// Sources are read from a sandbox of their own, never changed.
	src, err := sbs.Open(ctx, en)
	if err != nil {
		return err
	}
	defer src.Close()
	eopts := tracer.EpisodeOptions{MaxDepth: c.maxDepth, StepIn: c.stepIn, Seed: c.seed,
		Caps:   tracer.Caps{MaxEvents: c.maxEvents, MaxBytes: int(c.maxBytes)},
		Source: func(rel string) ([]byte, error) { return src.ReadFile(ctx, path.Join(env.RepoRoot, rel), 64<<20) }}
	ropts := tracer.RepoOptions{Workers: c.workers, Timeout: c.timeout, Caps: tracer.Caps{MaxEvents: c.maxTestEvents,
		MaxRepr: c.maxRepr}, Log: e.Log}
	return tracer.TraceTests(ctx, sbs, en, todo, ropts, func(r *tracer.RawTest) error {
		defer s.bar.Add(1)
		if r.Outcome != "" && r.Outcome != testrun.Pass {
			s.failing = append(s.failing, r.Test)
		}
		eps := tracer.Cut(r, eopts)
		if len(eps) == 0 && r.Status == tracer.Error {
			// Nothing recorded: the test's line says why (a result, not
			// a failure of the run).
			s.unrecorded++
			eps = []tracer.Episode{{ID: r.Test + "#error", Test: r.Test, Status: tracer.Error, Error: r.Error,
				Stats: tracer.EpisodeStats{TestEpisodes: 1}}}
		}
		for _, ep := range eps {
			if s.st.ids[ep.ID] {
				continue // written by an interrupted run
			}
			if err := s.w.Write(ep); err != nil {
				return fmt.Errorf("write %s: %w", target, err)
			}
			s.counts[ep.Status]++
			s.bar.Count(string(ep.Status))
			if ep.Status.Complete() {
				s.functions[ep.Function] = true
			}
		}
		return nil
	})
}

// sample writes at most --max-episodes-per-function episodes per function
// from the spool to the output, in the spool's order, then removes the
// spool. Ids already in the output are skipped, so this step resumes too.
func (c *traceRepoCmd) sample(spool string) (int, error) {
	var refs []tracer.EpisodeRef
	err := jsonl.Scan(spool, func(_ int, line []byte) error {
		var r struct {
			ID       string      `json:"id"`
			Function tracer.Code `json:"function"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		refs = append(refs, tracer.EpisodeRef{ID: r.ID, Function: r.Function})
		return nil
	})
	if err != nil {
		return 0, err
	}
	keep := tracer.Sample(refs, c.perFunction, c.seed)
	done, err := jsonl.Keys(c.out, jsonl.Field("id"))
	if err != nil {
		return 0, fmt.Errorf("cannot resume: %w", err)
	}
	w, err := jsonl.Append(c.out)
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
		return 0, fmt.Errorf("write %s from %s: %w", c.out, spool, err)
	}
	if err := w.Close(); err != nil {
		return 0, err
	}
	return written, os.Remove(spool)
}

func (s *repoRun) summary(w io.Writer, tests, skipped int, d time.Duration) {
	total := 0
	var parts []string
	for st, n := range s.counts {
		total += n
		parts = append(parts, fmt.Sprintf("%s %d", st, n))
	}
	sort.Strings(parts)
	where := s.cmd.out
	if s.cmd.perFunction > 0 {
		where += ".spool"
	}
	fmt.Fprintf(w, "%d episodes to %s from %d tests in %.1fs: %s; %d functions are the root of a complete episode\n",
		total, where, tests-skipped, d.Seconds(), strings.Join(parts, ", "), len(s.functions))
	if s.unrecorded > 0 {
		fmt.Fprintf(w, "%d tests could not be recorded (status error, id TEST#error)\n", s.unrecorded)
	}
	if len(s.failing) > 0 {
		fmt.Fprintf(w, "%d tests did not pass while traced (their episodes are kept): %s\n",
			len(s.failing), strings.Join(s.failing[:min(5, len(s.failing))], ", "))
	}
	if skipped > 0 {
		fmt.Fprintf(w, "skipped %d tests whose episodes are already in the output\n", skipped)
	}
	if s.cmd.perFunction > 0 {
		fmt.Fprintf(w, "wrote %d episodes to %s (at most %d per function)\n", s.kept, s.cmd.out, s.cmd.perFunction)
	}
}
