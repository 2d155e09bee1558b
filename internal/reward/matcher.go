package reward

import (
	"slices"
	"sort"
)

// Match is a matching block: a[A:A+Size] == b[B:B+Size].
type Match struct {
	A, B, Size int
}

// SequenceMatcher ports Python's difflib.SequenceMatcher with isjunk=None
// and autojunk=False, which is what the reward uses: no element is ever
// treated as junk or as "popular". Within that mode the results (longest
// matches, their tie-breaking, matching blocks, ratio) are identical to
// Python's, because the algorithm is the same: find the longest matching
// block, earliest in a then in b, and recurse on both sides.
//
// Like Python's, the cost is about the number of pairs of equal elements
// compared, which for characters is roughly len(a)*len(b)/(alphabet size)
// per level of recursion.
type SequenceMatcher[T comparable] struct {
	a, b []T
	// b2j lists, for each element of b, the indices where it occurs,
	// ascending.
	b2j map[T][]int

	// Dense replacements for difflib's j2len dictionaries: the length of
	// the match ending at b[j-1] on the previous row is prevLen[j] if
	// prevGen[j] is the previous row's generation. Generations avoid
	// clearing the arrays for every row.
	prevLen, curLen []int
	prevGen, curGen []int
	gen             int

	blocks []Match // cached MatchingBlocks
}

// NewSequenceMatcher returns a matcher of a against b. As in difflib the
// roles are not symmetric: the index is built on b, and ties are broken
// toward the start of a, so Ratio(a, b) may differ from Ratio(b, a).
func NewSequenceMatcher[T comparable](a, b []T) *SequenceMatcher[T] {
	m := &SequenceMatcher[T]{a: a, b: b, b2j: make(map[T][]int)}
	for j, x := range b {
		m.b2j[x] = append(m.b2j[x], j)
	}
	n := len(b) + 1
	m.prevLen, m.curLen = make([]int, n), make([]int, n)
	m.prevGen, m.curGen = make([]int, n), make([]int, n)
	return m
}

// FindLongestMatch returns the longest block with a[alo:ahi] and b[blo:bhi];
// among the longest, the one that starts earliest in a, then earliest in b.
// Size is 0 if there is none.
func (m *SequenceMatcher[T]) FindLongestMatch(alo, ahi, blo, bhi int) Match {
	best := Match{A: alo, B: blo}
	// Skip a generation so that no entry of an earlier call looks like it
	// belongs to the row before this call's first row.
	m.gen++
	for i := alo; i < ahi; i++ {
		m.gen++
		js := m.b2j[m.a[i]]
		for _, j := range js[sort.SearchInts(js, blo):] {
			if j >= bhi {
				break
			}
			k := 1
			if m.prevGen[j] == m.gen-1 { // index j holds the match ending at b[j-1]
				k = m.prevLen[j] + 1
			}
			m.curLen[j+1], m.curGen[j+1] = k, m.gen
			if k > best.Size {
				best = Match{A: i - k + 1, B: j - k + 1, Size: k}
			}
		}
		m.prevLen, m.curLen = m.curLen, m.prevLen
		m.prevGen, m.curGen = m.curGen, m.prevGen
	}
	// difflib then extends the block by equal non-junk neighbours. Without
	// junk the block is already maximal, so these loops never run; they
	// are kept so the port reads like the original.
	for best.A > alo && best.B > blo && m.a[best.A-1] == m.b[best.B-1] {
		best = Match{best.A - 1, best.B - 1, best.Size + 1}
	}
	for best.A+best.Size < ahi && best.B+best.Size < bhi && m.a[best.A+best.Size] == m.b[best.B+best.Size] {
		best.Size++
	}
	return best
}

// MatchingBlocks returns the non-overlapping matching blocks in increasing
// order, adjacent blocks merged, ending with the sentinel
// {len(a), len(b), 0}, as difflib's get_matching_blocks does.
func (m *SequenceMatcher[T]) MatchingBlocks() []Match {
	if m.blocks != nil {
		return m.blocks
	}
	type span struct{ alo, ahi, blo, bhi int }
	queue := []span{{0, len(m.a), 0, len(m.b)}}
	var found []Match
	for len(queue) > 0 {
		s := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		x := m.FindLongestMatch(s.alo, s.ahi, s.blo, s.bhi)
		if x.Size == 0 {
			continue
		}
		found = append(found, x)
		if s.alo < x.A && s.blo < x.B {
			queue = append(queue, span{s.alo, x.A, s.blo, x.B})
		}
		if x.A+x.Size < s.ahi && x.B+x.Size < s.bhi {
			queue = append(queue, span{x.A + x.Size, s.ahi, x.B + x.Size, s.bhi})
		}
	}
	slices.SortFunc(found, func(x, y Match) int {
		if x.A != y.A {
			return x.A - y.A
		}
		if x.B != y.B {
			return x.B - y.B
		}
		return x.Size - y.Size
	})
	var merged []Match
	cur := Match{}
	for _, x := range found {
		if cur.A+cur.Size == x.A && cur.B+cur.Size == x.B {
			cur.Size += x.Size
			continue
		}
		if cur.Size > 0 {
			merged = append(merged, cur)
		}
		cur = x
	}
	if cur.Size > 0 {
		merged = append(merged, cur)
	}
	m.blocks = append(merged, Match{len(m.a), len(m.b), 0})
	return m.blocks
}

// Ratio is 2*M/T, where M is the number of matched elements and T the total
// number of elements in both sequences; 1 when both are empty.
func (m *SequenceMatcher[T]) Ratio() float64 {
	matches := 0
	for _, x := range m.MatchingBlocks() {
		matches += x.Size
	}
	if total := len(m.a) + len(m.b); total > 0 {
		return 2.0 * float64(matches) / float64(total)
	}
	return 1
}

// Ratio is difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() on
// two strings: sequences of Unicode code points, as Python's str is.
// Invalid UTF-8 bytes count as U+FFFD each.
func Ratio(a, b string) float64 {
	return NewSequenceMatcher([]rune(a), []rune(b)).Ratio()
}
