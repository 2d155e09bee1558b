package tracer

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// episodeLine is what the summary tests read of an output line.
type episodeLine struct {
	ID       string       `json:"id"`
	Function Code         `json:"function"`
	Status   Status       `json:"status"`
	Context  string       `json:"context"`
	Frames   []Frame      `json:"frames"`
	Text     string       `json:"text"`
	Error    string       `json:"error"`
	Stats    EpisodeStats `json:"stats"`
}

func readEpisodes(t *testing.T, file string) []episodeLine {
	t.Helper()
	var out []episodeLine
	for _, l := range fileLines(t, file) {
		var ep episodeLine
		if err := json.Unmarshal([]byte(l), &ep); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, ep)
	}
	return out
}

// TestRepoSummaryCounts traces the example repository for real with the
// caps that leave episodes out, and checks the output and the summary's
// counts against a run that leaves nothing out: with at most 2 episodes
// per function and a cap of line events, every function has min(2, its
// complete episodes) complete lines, the episodes over the event cap are
// too_long lines without context, frames or text (trace check accepts
// them), and seen = written + function cap; with a cap of bytes, the
// episodes over it are the ones dropped.
func TestRepoSummaryCounts(t *testing.T) {
	e, _ := textkitRecordings(t)
	dir := t.TempDir()
	full := filepath.Join(dir, "full.jsonl")
	all := traceRepoTo(t, e, full, RepoRunOptions{})
	eps := readEpisodes(t, full)
	var events, sizes []int
	for _, ep := range eps {
		events, sizes = append(events, ep.Stats.LineEvents), append(sizes, ep.Stats.Bytes)
	}
	slices.Sort(events)
	slices.Sort(sizes)
	if diff := cmp.Diff(Dropped{}, all.Dropped); diff != "" || all.Seen != len(eps) || all.Written != len(eps) ||
		all.Bytes != fileSize(t, full) || all.Traced != len(e.Passing()) || all.Tests != len(e.Passing()) {
		t.Fatalf("uncapped run: %+v, %d lines of %d bytes, %d passing tests (dropped -want +got):\n%s",
			all, len(eps), fileSize(t, full), len(e.Passing()), diff)
	}

	maxEvents := events[len(events)*3/4] // a quarter of the episodes are over it
	overEvents := map[string]bool{}
	complete := map[Code]int{}
	for _, ep := range eps {
		if ep.Stats.LineEvents > maxEvents {
			overEvents[ep.ID] = true
		} else {
			complete[ep.Function]++
		}
	}
	out := filepath.Join(dir, "capped.jsonl")
	sum := traceRepoTo(t, e, out, RepoRunOptions{PerFunction: 2, Episode: EpisodeOptions{Caps: Caps{MaxEvents: maxEvents}}})
	got := readEpisodes(t, out)
	perFunction := map[Code]int{}
	statuses := map[Status]int{}
	tooLong := 0
	for _, ep := range got {
		statuses[ep.Status]++
		switch {
		case ep.Status.Complete():
			perFunction[ep.Function]++
		case ep.Status == TooLong && overEvents[ep.ID]:
			tooLong++
			if ep.Context != "" || ep.Frames != nil || ep.Text != "" || ep.Error == "" {
				t.Errorf("%s: over the event cap with %d bytes of context, %d frames, %d of text, error %q",
					ep.ID, len(ep.Context), len(ep.Frames), len(ep.Text), ep.Error)
			}
		default:
			t.Errorf("%s: status %s (%s)", ep.ID, ep.Status, ep.Error)
		}
	}
	want := map[Code]int{}
	for fn, n := range complete {
		want[fn] = min(n, 2)
	}
	if diff := cmp.Diff(want, perFunction); diff != "" {
		t.Errorf("complete episodes per function (-want +got):\n%s", diff)
	}
	dropped := len(eps) - len(overEvents)
	for _, n := range want {
		dropped -= n
	}
	wantSum := Dropped{FunctionCap: dropped, EventCap: len(overEvents)}
	t.Logf("%d episodes; at most 2 per function and %d line events: %+v", len(eps), maxEvents, wantSum)
	if dropped == 0 || len(overEvents) == 0 {
		t.Fatalf("nothing to leave out: %+v", wantSum)
	}
	if diff := cmp.Diff(wantSum, sum.Dropped); diff != "" || tooLong != len(overEvents) || sum.Seen != len(eps) ||
		sum.Written != len(got) || sum.Seen != sum.Written+sum.Dropped.FunctionCap || sum.Bytes != fileSize(t, out) {
		t.Errorf("capped run: seen %d written %d (%d lines, %d too_long, want %d; %d uncapped), %d bytes (file %d); dropped (-want +got):\n%s",
			sum.Seen, sum.Written, len(got), tooLong, len(overEvents), len(eps), sum.Bytes, fileSize(t, out), diff)
	}
	if diff := cmp.Diff(statuses, sum.Episodes); diff != "" {
		t.Errorf("summary's statuses differ from the output's (-output +summary):\n%s", diff)
	}
	if st, err := CheckFile(context.Background(), out); err != nil || st.Invalid != 0 {
		t.Errorf("trace check: %v, %+v", err, st)
	}

	maxBytes := sizes[len(sizes)*3/4]
	overBytes := 0
	for _, n := range sizes {
		if n > maxBytes {
			overBytes++
		}
	}
	if overBytes == 0 {
		t.Fatalf("no episode over %d bytes", maxBytes)
	}
	small := filepath.Join(dir, "small.jsonl")
	sum = traceRepoTo(t, e, small, RepoRunOptions{Episode: EpisodeOptions{Caps: Caps{MaxBytes: maxBytes}}})
	if want := (Dropped{ByteCap: overBytes}); sum.Dropped != want || sum.Seen != len(eps) || sum.Written != len(eps) {
		t.Errorf("--max-bytes %d: seen %d, written %d, dropped %+v; want %d, %d, %+v", maxBytes, sum.Seen, sum.Written, sum.Dropped, len(eps), len(eps), want)
	}
}
