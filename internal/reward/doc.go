// Package reward grades a model's patch for a task (CWM-SPEC 2.3): the
// task's hidden tests decide success, and when they fail, the similarity of
// the patch to the oracle patch shapes the reward, as in SWE-RL and CWM.
//
// The similarity is CWM's, exactly: a port of Python's
// difflib.SequenceMatcher ratio (matcher.go), a port of the parts of the
// unidiff library that CWM's normalization rests on (diff.go), and CWM's
// per-file normalization and averaging over the oracle's files
// (similarity.go). testdata/gen_similarity.py checks all three against
// Python. Grading (grade.go) applies a patch in a fresh sandbox on the
// task's environment and runs the hidden tests; reward.go maps the outcome
// to a reward and computes group-relative advantages. Scoring (score.go)
// is the stage over a file of SWE-bench predictions or cwm trajectories:
// resumed from its output, graded on bounded workers, written a task group
// at a time with the group's advantages, then summarised (cwm reward).
// docs/rewards.md describes the procedure and the output.
package reward
