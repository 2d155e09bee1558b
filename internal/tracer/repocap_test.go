package tracer

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/env"
)

// traceRepoTo runs TraceRepo on the example repository into out.
func traceRepoTo(t *testing.T, e *env.Env, out string, opts RepoRunOptions) *RepoSummary {
	t.Helper()
	opts.Env, opts.Out = e, out
	opts.Episode = EpisodeOptions{MaxDepth: 2, StepIn: 0.5, Seed: 5, Caps: opts.Episode.Caps}
	opts.Repo.Workers = 2
	sum, err := TraceRepo(context.Background(), env.NewSandboxes(shared.rt), opts)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func fileLines(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func fileSize(t *testing.T, file string) int64 {
	t.Helper()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestRepoTotalCap stops runs at --max-episodes and --max-total-bytes: the
// output holds no more, the summary says which cap stopped the run and how
// many tests it left, a rerun at the same cap adds nothing, and a rerun
// without it ends with the episodes of a run that was never capped.
func TestRepoTotalCap(t *testing.T) {
	e, _ := textkitRecordings(t)
	dir := t.TempDir()
	full := filepath.Join(dir, "full.jsonl")
	if sum := traceRepoTo(t, e, full, RepoRunOptions{}); sum.Capped != "" {
		t.Fatalf("uncapped run stopped at %s", sum.Capped)
	}
	want := fileLines(t, full)
	size := fileSize(t, full)
	if len(want) < 30 {
		t.Fatalf("%d episodes, too few for the test", len(want))
	}

	capped := filepath.Join(dir, "episodes.jsonl")
	sum := traceRepoTo(t, e, capped, RepoRunOptions{MaxEpisodes: 10})
	var sb strings.Builder
	sum.Write(&sb)
	if got := len(fileLines(t, capped)); got != 10 || !strings.Contains(sum.Capped, "--max-episodes") ||
		sum.NotTraced == 0 || !strings.Contains(sb.String(), "stopped at the total cap of 10 episodes") {
		t.Fatalf("--max-episodes 10: %d lines, capped %q, %d tests not traced; summary:\n%s", got, sum.Capped, sum.NotTraced, sb.String())
	}
	if sum.Written != 10 || sum.Dropped.TotalCap == 0 || sum.Seen != sum.Written+sum.Dropped.TotalCap || sum.Traced+sum.NotTraced != sum.Tests {
		t.Errorf("--max-episodes 10: seen %d, written %d, dropped %+v, tests %d traced %d not traced %d",
			sum.Seen, sum.Written, sum.Dropped, sum.Tests, sum.Traced, sum.NotTraced)
	}
	sum = traceRepoTo(t, e, capped, RepoRunOptions{MaxEpisodes: 10})
	if got := len(fileLines(t, capped)); got != 10 || sum.Capped == "" {
		t.Errorf("rerun at the cap: %d lines, capped %q", got, sum.Capped)
	}
	if sum = traceRepoTo(t, e, capped, RepoRunOptions{}); sum.Capped != "" {
		t.Errorf("rerun without the cap stopped at %s", sum.Capped)
	}
	if diff := cmp.Diff(sorted(want), sorted(fileLines(t, capped))); diff != "" {
		t.Errorf("capped then resumed differs from an uncapped run (-uncapped +resumed):\n%s", diff)
	}

	small := filepath.Join(dir, "bytes.jsonl")
	limit := size / 3
	sum = traceRepoTo(t, e, small, RepoRunOptions{MaxTotalBytes: limit})
	if got := fileSize(t, small); got > limit || got != sum.Bytes || !strings.Contains(sum.Capped, "--max-total-bytes") {
		t.Errorf("--max-total-bytes %d: %d bytes written (summary %d), capped %q", limit, got, sum.Bytes, sum.Capped)
	}
}

// TestRepoSpoolBounded checks that --max-episodes-per-function spools in
// full only the episodes that can still be chosen: the spool of a run
// keeping one episode per function fits in half of what all episodes take
// (it held every episode before), and the episodes chosen are Sample's
// choice among all of them.
func TestRepoSpoolBounded(t *testing.T) {
	e, _ := textkitRecordings(t)
	dir := t.TempDir()
	full := filepath.Join(dir, "full.jsonl")
	traceRepoTo(t, e, full, RepoRunOptions{})
	var refs []EpisodeRef
	for _, l := range fileLines(t, full) {
		var r EpisodeRef
		var ep struct {
			ID       string `json:"id"`
			Function Code   `json:"function"`
		}
		if err := json.Unmarshal([]byte(l), &ep); err != nil {
			t.Fatal(err)
		}
		r.ID, r.Function = ep.ID, ep.Function
		refs = append(refs, r)
	}
	keep := Sample(refs, 1, 5)

	out := filepath.Join(dir, "sampled.jsonl")
	limit := fileSize(t, full) / 2
	sum := traceRepoTo(t, e, out, RepoRunOptions{PerFunction: 1, MaxTotalBytes: limit})
	t.Logf("all episodes %d bytes; spool %d bytes", 2*limit, sum.FileBytes)
	if sum.Capped != "" || sum.FileBytes > limit {
		t.Fatalf("the spool took %d bytes (cap %d), capped %q", sum.FileBytes, limit, sum.Capped)
	}
	got := map[string]bool{}
	for _, l := range fileLines(t, out) {
		var ep Episode
		if err := json.Unmarshal([]byte(l), &ep); err != nil {
			t.Fatal(err)
		}
		if ep.Status.Complete() && ep.Text == "" {
			t.Errorf("%s: a stub was written to the output", ep.ID)
		}
		got[ep.ID] = true
	}
	if diff := cmp.Diff(keep, got); diff != "" {
		t.Errorf("episodes kept differ from Sample's choice (-want +got):\n%s", diff)
	}
}

func sorted(s []string) []string {
	return slices.Sorted(slices.Values(s))
}
