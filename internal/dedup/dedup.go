// Package dedup removes near-duplicate agent trajectories (CWM-SPEC 3:
// "near-duplicates are removed per repository: MinHash over the
// concatenated actions, kept pairs have Jaccard similarity below 0.5").
//
// Similarity is the Jaccard similarity of the sets of word shingles (k
// consecutive whitespace-separated words, k = 5 by default as in common
// near-duplicate pipelines for code and text) of an item's text, the
// concatenated actions of a trajectory.
//
// Keep rule: items are processed in input order, and an item is kept unless
// its Jaccard similarity with an already kept item of the same group is at
// least the threshold; it is then dropped as a duplicate of the first such
// kept item. So within a group every pair of kept items is below the
// threshold, and the outcome depends on the input order only.
//
// ExactDedup applies the rule by comparing each item with every kept item
// of its group. Dedup applies the same rule but compares an item only with
// the kept items LSH proposes: MinHash signatures cut into bands, an item
// being a candidate when some band matches exactly. Every decision still
// rests on the exact Jaccard similarity, so every dropped item really is a
// duplicate of a kept one; LSH can only miss a pair at or above the
// threshold, which leaves a duplicate kept (and, through the in-order rule,
// may change later decisions). With the default 64 bands of 2 rows that
// happens to a pair at similarity 0.5 with probability 1e-8, and less above
// (see MissProbability); the tests check that Dedup keeps exactly what
// ExactDedup keeps on planted near-duplicates. More rows per band would
// miss more pairs; fewer would cost more exact checks of dissimilar ones.
//
// Memory is about 8 bytes per shingle (the sets are kept for the exact
// checks) plus 8 bytes per band per item.
package dedup

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// Item is one trajectory.
type Item struct {
	ID string
	// Group is the unit of deduplication (the repository): items of
	// different groups are never compared.
	Group string
	// Text is the concatenated actions.
	Text string
}

// Options tune Dedup and ExactDedup. Zero fields take the defaults.
type Options struct {
	// Threshold is the Jaccard similarity at which an item is a duplicate
	// (default 0.5, CWM-SPEC 3).
	Threshold float64
	// Shingle is the number of consecutive words in a shingle (default 5).
	Shingle int
	// NumHashes is the MinHash signature length (default 128).
	NumHashes int
	// Bands is the number of LSH bands (default 64); NumHashes/Bands rows
	// each. Fewer rows find more pairs at the cost of more exact checks.
	Bands int
	// Seed selects the hash family; results are deterministic for a seed.
	Seed uint64
}

func (o Options) withDefaults() (Options, error) {
	if o.Threshold == 0 {
		o.Threshold = 0.5
	}
	if o.Shingle == 0 {
		o.Shingle = 5
	}
	if o.NumHashes == 0 {
		o.NumHashes = 128
	}
	if o.Bands == 0 {
		o.Bands = 64
	}
	switch {
	case !(o.Threshold > 0 && o.Threshold <= 1):
		return o, fmt.Errorf("dedup threshold %v is not in (0, 1]", o.Threshold)
	case o.Shingle < 1:
		return o, fmt.Errorf("dedup shingle size %d is below 1", o.Shingle)
	case o.NumHashes < 1 || o.Bands < 1 || o.NumHashes%o.Bands != 0:
		return o, fmt.Errorf("dedup: %d hashes do not split into %d equal bands", o.NumHashes, o.Bands)
	}
	return o, nil
}

// Dropped records a removed item.
type Dropped struct {
	ID string
	// DuplicateOf is the ID of the first kept item of the same group that
	// is at least Threshold similar.
	DuplicateOf string
	Jaccard     float64
}

// Dedup applies the keep rule using MinHash LSH to find candidates. kept
// holds the indices of the kept items in input order; dropped is in input
// order too.
func Dedup(items []Item, opts Options) (kept []int, dropped []Dropped, err error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	f := newFamily(o)
	sets := make([][]uint64, len(items))
	keys := make([]uint64, len(items)*o.Bands)
	parallel(len(items), func() func(int) {
		words := make([]uint64, 0, 512)
		sig := make([]uint64, o.NumHashes)
		return func(i int) {
			sets[i], words = shingles(items[i].Text, o.Shingle, words)
			f.signature(sets[i], sig)
			f.bandKeys(sig, keys[i*o.Bands:(i+1)*o.Bands])
		}
	})
	d := newDecisions(len(items))
	seen := make([]int32, len(items)) // candidate dedup stamps, per item
	for i := range seen {
		seen[i] = -1
	}
	groups := groupMembers(items)
	parallel(len(groups), func() func(int) {
		var cands []int32
		return func(g int) {
			// buckets maps a band key to the head of a list of kept items
			// in entries; one map per group keeps groups apart.
			buckets := make(map[uint64]int32)
			type entry struct{ item, next int32 }
			entries := []entry{}
			for _, j := range groups[g] {
				cands = cands[:0]
				jk := keys[int(j)*o.Bands : (int(j)+1)*o.Bands]
				for _, k := range jk {
					head, ok := buckets[k]
					for ok && head >= 0 {
						e := entries[head]
						if seen[e.item] != j {
							seen[e.item] = j
							cands = append(cands, e.item)
						}
						head = e.next
					}
				}
				// Lowest index first, so the duplicate found is the first
				// kept one, as in ExactDedup.
				slices.Sort(cands)
				if d.decide(j, cands, sets, o.Threshold) {
					for _, k := range jk {
						head, ok := buckets[k]
						if !ok {
							head = -1
						}
						entries = append(entries, entry{j, head})
						buckets[k] = int32(len(entries) - 1)
					}
				}
			}
		}
	})
	kept, dropped = d.result(items)
	return kept, dropped, nil
}

// ExactDedup applies the keep rule by comparing every item with every kept
// item of its group: the quadratic baseline Dedup must agree with.
func ExactDedup(items []Item, opts Options) (kept []int, dropped []Dropped, err error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	sets := make([][]uint64, len(items))
	parallel(len(items), func() func(int) {
		words := make([]uint64, 0, 512)
		return func(i int) { sets[i], words = shingles(items[i].Text, o.Shingle, words) }
	})
	d := newDecisions(len(items))
	groups := groupMembers(items)
	parallel(len(groups), func() func(int) {
		return func(g int) {
			var keptSoFar []int32
			for _, j := range groups[g] {
				if d.decide(j, keptSoFar, sets, o.Threshold) {
					keptSoFar = append(keptSoFar, j)
				}
			}
		}
	})
	kept, dropped = d.result(items)
	return kept, dropped, nil
}

// decisions holds, per item, the kept item it duplicates (-1 if kept).
// Groups are decided concurrently but touch disjoint indices.
type decisions struct {
	dupOf []int32
	jac   []float64
}

func newDecisions(n int) *decisions {
	return &decisions{dupOf: make([]int32, n), jac: make([]float64, n)}
}

// decide records whether item j is kept, given kept items of its group to
// compare with, in input order, and reports whether it was kept.
func (d *decisions) decide(j int32, keptCands []int32, sets [][]uint64, t float64) bool {
	for _, i := range keptCands {
		if jac, ok := jaccardAtLeast(sets[i], sets[j], t); ok {
			d.dupOf[j], d.jac[j] = i, jac
			return false
		}
	}
	d.dupOf[j] = -1
	return true
}

func (d *decisions) result(items []Item) (kept []int, dropped []Dropped) {
	kept = []int{}
	for j, i := range d.dupOf {
		if i < 0 {
			kept = append(kept, j)
			continue
		}
		dropped = append(dropped, Dropped{ID: items[j].ID, DuplicateOf: items[i].ID, Jaccard: d.jac[j]})
	}
	return kept, dropped
}

// groupMembers returns the indices of each group's items in input order,
// largest groups first.
func groupMembers(items []Item) [][]int32 {
	index := map[string]int{}
	var groups [][]int32
	for i, it := range items {
		g, ok := index[it.Group]
		if !ok {
			g = len(groups)
			index[it.Group] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], int32(i))
	}
	// Largest groups first, so one big group does not start last and
	// leave the other workers idle.
	slices.SortStableFunc(groups, func(a, b []int32) int { return len(b) - len(a) })
	return groups
}

// parallel runs work over 0..n-1 on GOMAXPROCS goroutines. newWorker is
// called once per goroutine so that each gets its own scratch buffers.
func parallel(n int, newWorker func() func(int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		do := newWorker()
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				do(i)
			}
		})
	}
	wg.Wait()
}
