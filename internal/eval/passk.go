package eval

import (
	"math"
	"sort"
	"strconv"
	"strings"
)

// problemOrder is the order a summary sums its problems in: by the ID's
// text before its trailing number, then by that number (sample_9 before
// sample_10), CruxEval's order, so that a mean is the same sum of the
// same terms on every run and equals the reference's to the last bit.
func problemOrder(perProblem map[string][2]int) []string {
	ids := make([]string, 0, len(perProblem))
	for id := range perProblem {
		ids = append(ids, id)
	}
	split := func(id string) (string, int) {
		head := strings.TrimRight(id, "0123456789")
		n, err := strconv.Atoi(id[len(head):])
		if err != nil {
			n = -1
		}
		return head, n
	}
	sort.Slice(ids, func(i, j int) bool {
		hi, ni := split(ids[i])
		hj, nj := split(ids[j])
		if hi != hj {
			return hi < hj
		}
		if ni != nj {
			return ni < nj
		}
		return ids[i] < ids[j]
	})
	return ids
}

// meanStdErr is the mean of xs and its standard error (the sample
// standard deviation over sqrt(len)).
func meanStdErr(xs []float64) (mean, se float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	v := 0.0
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	v /= float64(len(xs) - 1)
	return mean, math.Sqrt(v / float64(len(xs)))
}
