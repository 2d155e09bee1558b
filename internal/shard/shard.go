// Package shard splits a run between processes. Shard i of n takes the
// items whose key hashes to i, so the split does not depend on the order of
// the input and an item keeps its shard when others are added.
package shard

import (
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
)

// Shard is part Index of Count (0 <= Index < Count).
type Shard struct{ Index, Count int }

// All is the whole run.
var All = Shard{0, 1}

// Parse reads "i/n". An empty string means the shard of an indexed job when
// JOB_COMPLETION_INDEX and JOB_COMPLETIONS are set, and the whole run
// otherwise. A Kubernetes Indexed Job sets JOB_COMPLETION_INDEX itself; the
// pod template passes the job's completions as JOB_COMPLETIONS (the
// downward API does not expose them).
func Parse(s string) (Shard, error) {
	if s == "" {
		idx, n := os.Getenv("JOB_COMPLETION_INDEX"), os.Getenv("JOB_COMPLETIONS")
		if idx == "" || n == "" {
			return All, nil
		}
		s = idx + "/" + n
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want i/n with 0 <= i < n", s)
	}
	return Shard{i, n}, nil
}

// Has reports whether the item with this key belongs to the shard.
func (s Shard) Has(key string) bool {
	if s.Count <= 1 {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()%uint64(s.Count) == uint64(s.Index)
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }
