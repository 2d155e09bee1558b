// Package eval measures a model as a world model of code against an
// OpenAI-compatible endpoint: CruxEval's output prediction in CWM's four
// ways of answering (direct, with CruxEval's few-shot prompt and its
// chain-of-thought variant; trace-final; trace-full; reasoning), scored
// exactly as CruxEval's evaluate_score in a sandbox, with pass@k by the
// unbiased estimator. Prompts are files embedded from prompts/, the
// CruxEval problems from data/ (MIT, data/cruxeval.LICENSE).
//
// A run is a batch stage (cwm/internal/batch): one JSONL line per
// (problem, sample), resumed from the output, sharded by problem; model
// failures after retries are reported and left for the next run.
package eval
