package tracer

import (
	"encoding/binary"
	"hash/fnv"
	"sort"
)

// EpisodeRef names an episode for Sample.
type EpisodeRef struct {
	ID       string
	Function Code
}

// Sample returns the ids of the episodes kept when at most n per function
// are: those with the n smallest hashes of the seed and their id. The
// choice is uniform over a function's episodes, the same for the same seed,
// and independent of the order of refs and of the other functions.
func Sample(refs []EpisodeRef, n int, seed int64) map[string]bool {
	type ranked struct {
		key uint64
		id  string
	}
	by := map[Code][]ranked{}
	for _, r := range refs {
		by[r.Function] = append(by[r.Function], ranked{sampleKey(seed, r.ID), r.ID})
	}
	keep := map[string]bool{}
	for _, rs := range by {
		sort.Slice(rs, func(i, j int) bool {
			if rs[i].key != rs[j].key {
				return rs[i].key < rs[j].key
			}
			return rs[i].id < rs[j].id
		})
		for _, r := range rs[:min(n, len(rs))] {
			keep[r.id] = true
		}
	}
	return keep
}

// sampleKey is the FNV-1a hash of the seed and an episode id: Sample keeps
// a function's episodes with the smallest keys.
func sampleKey(seed int64, id string) uint64 {
	var s [8]byte
	binary.LittleEndian.PutUint64(s[:], uint64(seed))
	h := fnv.New64a()
	h.Write(s[:])
	h.Write([]byte(id))
	return h.Sum64()
}

// sampleFront follows, episode by episode, which ones Sample can still
// keep: an episode with n smaller (key, id) of its function seen before it
// never will be, since what was seen stays. So a spool needs to hold in
// full only the episodes Admit accepts, n times the harmonic number of a
// function's episodes on average rather than all of them.
type sampleFront struct {
	n    int
	seed int64
	// best holds per function the (at most n) smallest seen, sorted.
	best map[Code][]sampleRank
}

type sampleRank struct {
	key uint64
	id  string
}

func (a sampleRank) less(b sampleRank) bool {
	return a.key < b.key || a.key == b.key && a.id < b.id
}

func newSampleFront(n int, seed int64) *sampleFront {
	return &sampleFront{n: n, seed: seed, best: map[Code][]sampleRank{}}
}

// Admit records episode id of function f and reports whether Sample over
// everything seen so far (and so over anything seen later) can keep it.
func (f *sampleFront) Admit(fn Code, id string) bool {
	r := sampleRank{sampleKey(f.seed, id), id}
	best := f.best[fn]
	i := sort.Search(len(best), func(i int) bool { return r.less(best[i]) })
	if i >= f.n {
		return false
	}
	best = append(best, sampleRank{})
	copy(best[i+1:], best[i:])
	best[i] = r
	f.best[fn] = best[:min(len(best), f.n)]
	return true
}
