// Package passk is the pass@k estimator that cwm eval and cwm select
// share, so that their figures are computed one way, and the conventions
// for a CruxEval sample that repeats the call it was asked about.
package passk

import "fmt"

// Estimate is the unbiased estimator of pass@k (Chen et al., 2021) from n
// samples of which c are correct: 1 - C(n-c, k)/C(n, k), the chance that k
// samples drawn from the n without replacement hold a correct one,
// computed as CruxEval's pass_at_k does (1 - prod_{i=n-c+1}^{n} (1 - k/i),
// which does not overflow) and equal to it to the last bit.
//
// Outside 1 <= k <= n the estimator is not defined; Estimate gives what
// drawing min(k, n) samples gives: for k > n, 1 when some sample is
// correct and 0 when none is (CruxEval's formula gives 1 for both); for
// k <= 0, 0 (no sample drawn, none correct).
func Estimate(n, c, k int) float64 {
	switch {
	case k <= 0:
		return 0
	case k > n && c <= 0:
		return 0
	case n-c < k:
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}

// Echo is how a CruxEval sample whose answer contains the call f(INPUT)
// counts.
type Echo string

const (
	// EchoWrong counts it as a sample that is wrong: the paper's reading
	// ("we reject answers that contain the function call") and cwm's
	// default.
	EchoWrong Echo = "wrong"
	// EchoDrop drops it from the problem's samples, unless no sample of
	// the problem is right, when all count as wrong: what CruxEval's
	// evaluate_score does, and so the numbers its published tables and
	// scored files hold.
	EchoDrop Echo = "drop"
)

// ParseEcho reads a --count-echo value.
func ParseEcho(s string) (Echo, error) {
	switch e := Echo(s); e {
	case EchoWrong, EchoDrop:
		return e, nil
	}
	return "", fmt.Errorf("%q: want %s (the paper: an echo is a wrong sample) or %s (CruxEval's script: echoes leave the sample count)", s, EchoWrong, EchoDrop)
}

// Samples is the (n, c) that Estimate is given for a problem with n
// samples, c of them correct and echoed of them echoing the call, under
// convention e.
func Samples(n, c, echoed int, e Echo) (int, int) {
	if e == EchoDrop && c > 0 {
		return n - echoed, c
	}
	return n, c
}
