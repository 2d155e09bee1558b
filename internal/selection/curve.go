package selection

import (
	"hash/fnv"
	"math/rand/v2"
	"sort"
)

// Subsamples is how many k-subsets of a task's candidates a curve point
// averages over (all of them when there are fewer).
const Subsamples = 32

// KeepTests picks the kept generated tests (CWM: "the 5 generated tests
// that the most patches agree on"): of the reproducing tests (indexes into
// each class's pass vector), the keep that the most eligible candidates
// pass, ties broken by the lower test index (the order the tests were
// generated in). A test no candidate passes tells no candidate apart
// from another and is not kept.
func KeepTests(cands []Candidate, eligible []bool, passes map[string][]bool, reproducing []int, keep int) []int {
	count := map[int]int{}
	for i, c := range cands {
		if !eligible[i] {
			continue
		}
		for _, t := range reproducing {
			if p := passes[c.Class]; t < len(p) && p[t] {
				count[t]++
			}
		}
	}
	order := append([]int{}, reproducing...)
	sort.SliceStable(order, func(a, b int) bool {
		if count[order[a]] != count[order[b]] {
			return count[order[a]] > count[order[b]]
		}
		return order[a] < order[b]
	})
	var kept []int
	for _, t := range order {
		if len(kept) == keep || count[t] == 0 {
			break
		}
		kept = append(kept, t)
	}
	sort.Ints(kept)
	return kept
}

// GeneratedScores is how many of the kept tests each class passes.
func GeneratedScores(passes map[string][]bool, kept []int) map[string]int {
	g := map[string]int{}
	for cl, p := range passes {
		for _, t := range kept {
			if t < len(p) && p[t] {
				g[cl]++
			}
		}
	}
	return g
}

// Ks are the curve's points for n candidates: 1, 2, 4, ... and n itself.
func Ks(n int) []int {
	var ks []int
	for k := 1; k < n; k *= 2 {
		ks = append(ks, k)
	}
	if n > 0 {
		ks = append(ks, n)
	}
	return ks
}

// Subsets returns the k-subsets of n candidates a curve point averages
// over: all C(n, k) when there are at most Subsamples of them, else
// Subsamples distinct ones drawn at random with a seed made from key
// (the task's id) and k, so that a curve is the same on every run. Each
// subset lists indexes in increasing order.
func Subsets(n, k int, key string) [][]int {
	if k <= 0 || k > n {
		return nil
	}
	if binomialAtMost(n, k, Subsamples) {
		var all [][]int
		var rec func(start int, cur []int)
		rec = func(start int, cur []int) {
			if len(cur) == k {
				all = append(all, append([]int{}, cur...))
				return
			}
			for i := start; i <= n-(k-len(cur)); i++ {
				rec(i+1, append(cur, i))
			}
		}
		rec(0, nil)
		return all
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	rng := rand.New(rand.NewPCG(h.Sum64(), uint64(k)))
	seen := map[string]bool{}
	var out [][]int
	for len(out) < Subsamples {
		s := rng.Perm(n)[:k]
		sort.Ints(s)
		id := string(fmtInts(s))
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, s)
	}
	return out
}

// binomialAtMost reports whether C(n, k) <= limit, without overflow.
func binomialAtMost(n, k, limit int) bool {
	k = min(k, n-k)
	c := 1
	for i := 1; i <= k; i++ {
		c = c * (n - k + i) / i
		if c > limit {
			return false
		}
	}
	return true
}

func fmtInts(s []int) []byte {
	var b []byte
	for _, x := range s {
		b = append(b, byte(x), byte(x>>8), ',')
	}
	return b
}
