package selection

import "fmt"

// Majority groupings: how majority@k tells two patches are the same.
const (
	// GroupExact is CWM's released voting
	// (evals/scripts/swerl/tts_majority_voting.py): patches are equal when
	// their text is, empty ones are skipped, and a tie goes to the patch
	// that comes first in the script's shuffled order.
	GroupExact = "exact"
	// GroupNormalised groups by Normalise (context, whitespace, comments
	// do not count) and breaks ties by fewer tokens, then input order.
	GroupNormalised = "normalised"
)

// CWMShuffles replays the shuffles of CWM's majority-voting script:
// random.seed(seed) (the script's model_name_or_path), then, for each
// instance in the order it first appears in the trajectory files, a
// random.shuffle of its trajectories in file order; sizes are those
// instances' trajectory counts. Each permutation lists, by shuffled
// position, the file position of the trajectory there.
func CWMShuffles(seed string, sizes []int) [][]int {
	r := newPyRandom(seed)
	out := make([][]int, len(sizes))
	for i, n := range sizes {
		out[i] = r.shuffle(n)
	}
	return out
}

// MajorityExact is the script's pick among patches listed in its
// shuffled order (already cut to max_samples): the most common non-empty
// patch text, a tie going to the one first seen (Counter.most_common).
// It returns the winner's position in patches, -1 when all are empty, and
// how many share its text.
func MajorityExact(patches []string) (int, int) {
	count := map[string]int{}
	first := map[string]int{}
	win := -1
	for i, p := range patches {
		if p == "" {
			continue
		}
		if _, ok := first[p]; !ok {
			first[p] = i
		}
		count[p]++
	}
	for i, p := range patches {
		if p == "" || first[p] != i {
			continue
		}
		if win < 0 || count[p] > count[patches[win]] {
			win = i
		}
	}
	if win < 0 {
		return -1, 0
	}
	return win, count[patches[win]]
}

// majorityExactWhy says how many candidates share the exact winner.
func majorityExactWhy(n, votes int) string {
	return fmt.Sprintf("majority vote (CWM's): %d of %d candidates share its exact patch, first in the shuffle among ties", votes, n)
}

// shuffleSizes counts the candidate lines of every task, known or not, in
// the order tasks first appear: the stream of shuffles CWM's script draws
// for the candidates file read as its trajectory files.
type shuffleSizes struct {
	order []string
	n     map[string]int
}

func (s *shuffleSizes) add(id string) {
	if s.n == nil {
		s.n = map[string]int{}
	}
	if _, ok := s.n[id]; !ok {
		s.order = append(s.order, id)
	}
	s.n[id]++
}

// ranks is, by task, each line's (by file position) place in CWM's
// shuffle with seed.
func (s *shuffleSizes) ranks(seed string) map[string][]int {
	sizes := make([]int, len(s.order))
	for i, id := range s.order {
		sizes[i] = s.n[id]
	}
	out := map[string][]int{}
	for i, perm := range CWMShuffles(seed, sizes) {
		r := make([]int, len(perm))
		for pos, line := range perm {
			r[line] = pos
		}
		out[s.order[i]] = r
	}
	return out
}
