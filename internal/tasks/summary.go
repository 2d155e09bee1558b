package tasks

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"cwm/internal/mutate"
)

// Write prints the summary as a table, one row per family.
func (s *Summary) Write(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "%-11s %10s %10s %8s %10s %10s %6s %6s %8s\n", "family", "candidates", "applicable", "compiled", "duplicates", "unexecuted", "tried", "broke", "verified")
	var tot FamilyCounts
	for _, f := range mutate.AllFamilies {
		c := s.Families[f]
		if c == nil || (f == mutate.Procedural && c.Candidates == 0) {
			continue // the extra family shows only when asked for
		}
		fmt.Fprintf(&b, "%-11s %10d %10d %8d %10d %10d %6d %6d %8d\n", f, c.Candidates, c.Applicable, c.Compiled, c.Duplicates, c.Unexecuted, c.Tried, c.BrokeTests, c.Verified)
		tot.Candidates += c.Candidates
		tot.Applicable += c.Applicable
		tot.Compiled += c.Compiled
		tot.Duplicates += c.Duplicates
		tot.Unexecuted += c.Unexecuted
		tot.Tried += c.Tried
		tot.BrokeTests += c.BrokeTests
		tot.Verified += c.Verified
	}
	fmt.Fprintf(&b, "%-11s %10d %10d %8d %10d %10d %6d %6d %8d\n", "total", tot.Candidates, tot.Applicable, tot.Compiled, tot.Duplicates, tot.Unexecuted, tot.Tried, tot.BrokeTests, tot.Verified)
	if len(s.Rejected) > 0 {
		kinds := make([]string, 0, len(s.Rejected))
		for k := range s.Rejected {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		var parts []string
		for _, k := range kinds {
			parts = append(parts, fmt.Sprintf("%s %d", k, s.Rejected[k]))
		}
		fmt.Fprintf(&b, "rejected: %s\n", strings.Join(parts, ", "))
	}
	if s.Resumed > 0 || s.Existing > 0 {
		fmt.Fprintf(&b, "resumed: %d candidates decided earlier, %d tasks already written\n", s.Resumed, s.Existing)
	}
	fmt.Fprintf(&b, "wrote %d tasks in %.1fs", s.Written, s.Seconds)
	if s.Written > 0 {
		fmt.Fprintf(&b, " (%.2fs per task)", s.Seconds/float64(s.Written))
	}
	b.WriteByte('\n')
	io.WriteString(w, b.String())
}
