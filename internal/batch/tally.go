package batch

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"cwm/internal/progress"
)

// Tally counts a run's outcomes by name (a trace's status, an episode's
// exit reason, a decision's kind) for the stage's summary, and shows each
// on the run's progress bar as it is counted. It is safe for concurrent
// use; a nil *Tally counts nothing.
type Tally struct {
	bar *progress.Bar

	mu sync.Mutex
	n  map[string]int // guarded by mu
}

// NewTally returns a tally that also counts on bar (nil: none).
func NewTally(bar *progress.Bar) *Tally { return &Tally{bar: bar, n: map[string]int{}} }

// Count counts one outcome called name.
func (t *Tally) Count(name string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.n[name]++
	t.mu.Unlock()
	t.bar.Count(name)
}

// Get is how many outcomes called name were counted.
func (t *Tally) Get(name string) int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n[name]
}

// Total is how many outcomes were counted.
func (t *Tally) Total() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, c := range t.n {
		n += c
	}
	return n
}

// Counts returns a copy of the counts.
func (t *Tally) Counts() map[string]int {
	out := map[string]int{}
	if t == nil {
		return out
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, v := range t.n {
		out[k] = v
	}
	return out
}

// String lists the counts as "name n", sorted by name, joined by ", ":
// "exception 2, ok 798".
func (t *Tally) String() string { return FormatCounts(t.Counts()) }

// FormatCounts writes counts as Tally.String does.
func FormatCounts(counts map[string]int) string {
	parts := make([]string, 0, len(counts))
	for k, v := range counts {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
