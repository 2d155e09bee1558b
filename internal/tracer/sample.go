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
	var s [8]byte
	binary.LittleEndian.PutUint64(s[:], uint64(seed))
	for _, r := range refs {
		h := fnv.New64a()
		h.Write(s[:])
		h.Write([]byte(r.ID))
		by[r.Function] = append(by[r.Function], ranked{h.Sum64(), r.ID})
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
