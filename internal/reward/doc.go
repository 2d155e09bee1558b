// Package reward grades a model's patch for a task (CWM-SPEC 2.3): the
// task's hidden tests decide success, and when they fail, the similarity of
// the patch to the oracle patch shapes the reward, as in SWE-RL.
//
// This part of the package is the similarity: an exact Go port of Python's
// difflib.SequenceMatcher ratio (matcher.go), a unified-diff parser
// (diff.go), and the per-file normalization and averaging (similarity.go).
package reward
