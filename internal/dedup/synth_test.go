package dedup

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// synthSet is a synthetic corpus with planted near-duplicates.
type synthSet struct {
	items []Item
	// source[j] is the index of the item j was edited from, or -1.
	source []int
}

// synth generates n trajectories spread round-robin over groups
// repositories. A trajectory is 30 actions of about 10 words; a quarter of
// the actions come from a pool of 40 commands shared within the repository
// (running the tests, opening the same files), the rest from a Zipf
// vocabulary, so unrelated trajectories of a repository overlap a little,
// as real ones do. A fraction dupRate of the items are edited copies of an
// earlier item of their group: each word replaced with a probability drawn
// from [0, 0.25], and sometimes actions dropped or inserted, which spreads
// their similarity to the source across the 0.5 threshold.
func synth(n, groups int, dupRate float64, seed uint64) synthSet {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	zipf := rand.NewZipf(r, 1.1, 4, 20000)
	word := func() string { return fmt.Sprintf("w%d", zipf.Uint64()) }
	action := func() string {
		words := make([]string, 6+r.IntN(9))
		for i := range words {
			words[i] = word()
		}
		return strings.Join(words, " ")
	}
	pools := make([][]string, groups)
	for g := range pools {
		for range 40 {
			pools[g] = append(pools[g], action())
		}
	}
	var s synthSet
	byGroup := make([][]int, groups)
	actions := make([][]string, n)
	for j := range n {
		g := j % groups
		src := -1
		if len(byGroup[g]) > 0 && r.Float64() < dupRate {
			src = byGroup[g][r.IntN(len(byGroup[g]))]
			actions[j] = edit(r, actions[src], r.Float64()*0.25, action, word)
		} else {
			for range 30 {
				if r.IntN(4) == 0 {
					actions[j] = append(actions[j], pools[g][r.IntN(len(pools[g]))])
				} else {
					actions[j] = append(actions[j], action())
				}
			}
		}
		byGroup[g] = append(byGroup[g], j)
		s.items = append(s.items, Item{
			ID:    fmt.Sprintf("t%05d", j),
			Group: fmt.Sprintf("repo%03d", g),
			Text:  strings.Join(actions[j], "\n"),
		})
		s.source = append(s.source, src)
	}
	return s
}

// edit copies actions, replacing each word with probability p and
// sometimes dropping or inserting an action.
func edit(r *rand.Rand, actions []string, p float64, action, word func() string) []string {
	var out []string
	for _, a := range actions {
		switch r.IntN(20) {
		case 0:
			continue // dropped
		case 1:
			out = append(out, action()) // inserted
		}
		words := strings.Fields(a)
		for i := range words {
			if r.Float64() < p {
				words[i] = word()
			}
		}
		out = append(out, strings.Join(words, " "))
	}
	return out
}
