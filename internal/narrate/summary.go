package narrate

import (
	"fmt"
	"io"

	"cwm/internal/batch"
	"cwm/internal/jsonl"
)

// Summary is a run's result over its shard, read from the output.
type Summary struct {
	Model string `json:"model"`
	// Traces is the number of the shard's traces with a line; Kept and
	// Dropped split them.
	Traces  int `json:"traces"`
	Kept    int `json:"kept"`
	Dropped int `json:"dropped"`
	// Reasons counts the lines by reason (Consistent is the kept ones).
	Reasons map[string]int `json:"reasons"`
	// PromptTokens and CompletionTokens are the usage of the narrations;
	// TokensEstimated is set when some were bytes/4 estimates.
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TokensEstimated  bool  `json:"tokens_estimated"`
	// Missing counts the shard's traces not in the output (model errors,
	// --max, an interrupted run).
	Missing     int     `json:"missing"`
	ModelErrors int     `json:"model_errors"`
	Resumed     int     `json:"resumed"`
	Seconds     float64 `json:"seconds"`
}

// Summarize reads the lines of out whose ids are in want (all when nil).
func Summarize(out string, want map[string]bool) (*Summary, error) {
	sum := &Summary{Reasons: map[string]int{}}
	seen := map[string]bool{}
	err := jsonl.Decode(out, func(_ int, l Line) error {
		if want != nil && !want[l.ID] || seen[l.ID] {
			return nil
		}
		seen[l.ID] = true
		sum.Traces++
		sum.Reasons[l.Reason]++
		if l.Kept {
			sum.Kept++
		} else {
			sum.Dropped++
		}
		sum.PromptTokens += l.Usage.PromptTokens
		sum.CompletionTokens += l.Usage.CompletionTokens
		sum.TokensEstimated = sum.TokensEstimated || l.Usage.Estimated
		return nil
	})
	if err != nil {
		return nil, err
	}
	if want != nil {
		sum.Missing = len(want) - len(seen)
	}
	return sum, nil
}

// Write prints the summary for people.
func (s *Summary) Write(w io.Writer) {
	share := 0.0
	if s.Traces > 0 {
		share = 100 * float64(s.Kept) / float64(s.Traces)
	}
	fmt.Fprintf(w, "narrated %d traces (%s): %d kept (%.1f%%), %d dropped\n", s.Traces, s.Model, s.Kept, share, s.Dropped)
	fmt.Fprintf(w, "reasons: %s\n", batch.FormatCounts(s.Reasons))
	est := ""
	if s.TokensEstimated {
		est = " (some estimated as bytes/4)"
	}
	fmt.Fprintf(w, "tokens: %d prompt, %d completion%s\n", s.PromptTokens, s.CompletionTokens, est)
	if s.Resumed > 0 || s.Missing > 0 || s.ModelErrors > 0 {
		fmt.Fprintf(w, "resumed %d, missing %d, model errors %d\n", s.Resumed, s.Missing, s.ModelErrors)
	}
	if s.Seconds > 0 {
		fmt.Fprintf(w, "took %.1fs\n", s.Seconds)
	}
}
