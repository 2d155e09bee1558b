package eval

import "math"

// PassAtK is the unbiased estimator of pass@k from n samples of which c
// are correct (Chen et al. 2021, as CruxEval computes it):
// 1 - C(n-c, k) / C(n, k), as a product so that it does not overflow.
func PassAtK(n, c, k int) float64 {
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
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
