package taskexport

import (
	"sort"

	"cwm/internal/logparse"
)

// keepable splits ids into those SWE-bench's parser reports under their
// own name and those it cannot: an id with whitespace (cut at the first
// space), or one whose key another test of the suite (all) also has.
func keepable(ids, all []string) (kept, left []string) {
	owners := map[string]int{}
	for _, id := range all {
		owners[logparse.PytestKey(id)]++
	}
	for _, id := range ids {
		if logparse.PytestKey(id) != id || owners[id] > 1 {
			left = append(left, id)
			continue
		}
		kept = append(kept, id)
	}
	return kept, left
}

func sorted(ids []string) []string {
	out := append([]string{}, ids...)
	sort.Strings(out)
	return out
}
