package tracer

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/trace"
)

// The example repository's environment and the recordings of its passing
// tests, made once for every repository test.
var textkit struct {
	once  sync.Once
	env   *env.Env
	tests []*RawTest
	err   error
}

func textkitRecordings(t *testing.T) (*env.Env, []*RawTest) {
	t.Helper()
	rt := testRuntime(t)
	textkit.once.Do(func() {
		src := filepath.Join(shared.home, "src", "textkit")
		if textkit.err = os.CopyFS(src, os.DirFS("../../examples/textkit")); textkit.err != nil {
			return
		}
		textkit.env, textkit.err = envbuild.Build(context.Background(), env.NewSandboxes(rt),
			envbuild.Options{Home: shared.home, Source: src, Runs: 1})
		if textkit.err != nil {
			return
		}
		textkit.tests, textkit.err = recordTests(textkit.env, RepoOptions{Workers: 2})
	})
	if textkit.err != nil {
		t.Fatalf("examples/textkit: %v", textkit.err)
	}
	return textkit.env, textkit.tests
}

func recordTests(e *env.Env, opts RepoOptions) ([]*RawTest, error) {
	var out []*RawTest
	err := TraceTests(context.Background(), env.NewSandboxes(shared.rt), e, e.Passing(), opts,
		func(r *RawTest) error { out = append(out, r); return nil })
	return out, err
}

func layerSource(e *env.Env) func(string) ([]byte, error) {
	return func(rel string) ([]byte, error) { return os.ReadFile(filepath.Join(e.LayerDir(), "repo", rel)) }
}

func cutAll(e *env.Env, tests []*RawTest, opts EpisodeOptions) []Episode {
	opts.Source = layerSource(e)
	var out []Episode
	for _, r := range tests {
		out = append(out, Cut(r, opts)...)
	}
	return out
}

// TestRepoEpisodes checks every episode of the example repository: each
// complete one parses strictly and validates, and its frames are its text.
func TestRepoEpisodes(t *testing.T) {
	e, tests := textkitRecordings(t)
	if len(tests) != len(e.Passing()) {
		t.Fatalf("%d recordings for %d passing tests", len(tests), len(e.Passing()))
	}
	for _, r := range tests {
		if r.Status != OK {
			t.Errorf("%s: recording %s (%s)", r.Test, r.Status, r.Error)
		}
	}
	eps := cutAll(e, tests, EpisodeOptions{MaxDepth: 2, StepIn: 0.5, Seed: 1})
	counts := map[Status]int{}
	for _, ep := range eps {
		counts[ep.Status]++
		if !ep.Status.Complete() {
			t.Errorf("%s: status %s (%s)", ep.ID, ep.Status, ep.Error)
			continue
		}
		tr, err := trace.Parse(ep.Text)
		if err != nil {
			t.Errorf("%s: trace.Parse: %v", ep.ID, err)
			continue
		}
		if err := trace.Validate(tr); err != nil {
			t.Errorf("%s: trace.Validate: %v", ep.ID, err)
		}
		frames := make([]trace.Frame, len(ep.Frames))
		for i, f := range ep.Frames {
			frames[i] = f.Frame
			frames[i].Lineno = 0 // not in the text
		}
		if diff := cmp.Diff(frames, tr.Frames); diff != "" {
			t.Errorf("%s: frames differ from the text (-frames +text):\n%s", ep.ID, diff)
		}
		if !strings.Contains(ep.Context, "# file: "+ep.Function.File+"\n") {
			t.Errorf("%s: context lacks the file of %s", ep.ID, ep.Function.Qualname)
		}
	}
	t.Logf("%d tests, %d episodes: %v", len(tests), len(eps), counts)
	if counts[OK] == 0 || counts[Exception] == 0 {
		t.Errorf("want ok and exception episodes, got %v", counts)
	}
}

// TestRepoSameSeed records the tests again (one worker this time) and cuts
// both recordings with the same seed: the episodes are the same bytes.
// Another seed gives other episodes.
func TestRepoSameSeed(t *testing.T) {
	e, tests := textkitRecordings(t)
	again, err := recordTests(e, RepoOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	opts := EpisodeOptions{MaxDepth: 3, StepIn: 0.5, Seed: 7}
	a, b := marshal(t, cutAll(e, tests, opts)), marshal(t, cutAll(e, again, opts))
	if a != b {
		t.Errorf("the same seed gave different episodes (%d and %d bytes)", len(a), len(b))
	}
	opts.Seed = 8
	if c := marshal(t, cutAll(e, tests, opts)); c == a {
		t.Errorf("seeds 7 and 8 gave the same episodes")
	}
}

func marshal(t *testing.T, eps []Episode) string {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	for _, ep := range eps {
		if err := enc.Encode(ep); err != nil {
			t.Fatal(err)
		}
	}
	return sb.String()
}

// TestRepoCoverage compares the episodes with the environment's coverage
// map: with step-in 0 every call is its own episode, so each function the
// passing tests execute is the root of an episode, and no other is.
func TestRepoCoverage(t *testing.T) {
	e, tests := textkitRecordings(t)
	cov, err := env.LoadCoverage(e)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, fc := range cov.Functions() {
		want[fc.Func.String()] = true
	}
	got := map[string]bool{}
	for _, ep := range cutAll(e, tests, EpisodeOptions{MaxDepth: 2, StepIn: 0, Seed: 1}) {
		if ep.Status.Complete() {
			f := env.FuncRef{File: ep.Function.File, Name: ep.Function.Qualname, Line: ep.Function.Firstlineno}
			got[f.String()] = true
		}
	}
	if diff := cmp.Diff(sortedKeys(want), sortedKeys(got)); diff != "" {
		t.Errorf("episode roots differ from the coverage map's functions (-coverage +episodes):\n%s", diff)
	}
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestRepoDepth checks the two ends of step-in: 0 gives episodes of depth
// 0 only; 1 inlines every callee down to the maximum depth, and no deeper.
func TestRepoDepth(t *testing.T) {
	e, tests := textkitRecordings(t)
	for _, tc := range []struct {
		stepIn   float64
		maxDepth int
		want     int // the deepest frame of any episode
	}{
		{0, 3, 0},
		{1, 1, 1},
		{1, 2, 2},
	} {
		deepest := 0
		eps := cutAll(e, tests, EpisodeOptions{MaxDepth: tc.maxDepth, StepIn: tc.stepIn, Seed: 1})
		for _, ep := range eps {
			for _, f := range ep.Frames {
				deepest = max(deepest, f.Depth)
			}
			if ep.Stats.Depth > tc.maxDepth {
				t.Errorf("step-in %g, max depth %d: %s has depth %d", tc.stepIn, tc.maxDepth, ep.ID, ep.Stats.Depth)
			}
		}
		if deepest != tc.want {
			t.Errorf("step-in %g, max depth %d: deepest frame at depth %d, want %d", tc.stepIn, tc.maxDepth, deepest, tc.want)
		}
	}
}

// TestRepoUnittest records a repository whose tests are plain unittest
// modules: the recorder wraps unittest's command line instead of loading
// into pytest.
func TestRepoUnittest(t *testing.T) {
	rt := testRuntime(t)
	src := filepath.Join(t.TempDir(), "bareunit")
	if err := os.CopyFS(src, os.DirFS("../envbuild/testdata/bareunit")); err != nil {
		t.Fatal(err)
	}
	e, err := envbuild.Build(context.Background(), env.NewSandboxes(rt), envbuild.Options{Home: shared.home, Source: src, Runs: 1, NoCoverage: true})
	if err != nil {
		t.Fatal(err)
	}
	if e.TestCommand.Framework != "unittest" {
		t.Fatalf("bareunit runs with %s, want unittest", e.TestCommand.Framework)
	}
	tests, err := recordTests(e, RepoOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ep := range cutAll(e, tests, EpisodeOptions{StepIn: 0}) {
		if !ep.Status.Complete() {
			t.Errorf("%s: %s (%s)", ep.ID, ep.Status, ep.Error)
		}
		got = append(got, ep.Function.Qualname+" "+string(ep.Status))
	}
	sort.Strings(got)
	want := []string{"circle_area exception", "circle_area ok", "rectangle_area ok", "rectangle_area ok"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("episodes (-want +got):\n%s", diff)
	}
}
