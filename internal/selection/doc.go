// Package selection picks one patch for a task out of k candidates, as
// CWM's best@k and R2E-Gym's hybrid verifier do, and measures how well
// each way of picking does as k grows.
//
// The pure part (normalise.go, pick.go, curve.go) needs no sandbox:
// patch equivalence by normalised diffs, majority@k, best@k with its tie
// rules and early stopping, the unbiased pass@k estimator and the curves
// over k by subsampling. The executing part (generate.go, run.go,
// stage.go) writes tests with a model, runs them and the regression set in
// sandboxes on the task's unpatched tree and on each distinct candidate,
// and is the `cwm select` stage. See docs/select.md.
package selection
