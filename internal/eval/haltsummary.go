package eval

import (
	"fmt"
	"io"

	"cwm/internal/jsonl"
)

// ClassStats are precision and recall of one class.
type ClassStats struct {
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	// Predicted and Actual count the answers of the class and the
	// programs labelled with it.
	Predicted int `json:"predicted"`
	Actual    int `json:"actual"`
}

// HaltSummary is a halting run's result.
type HaltSummary struct {
	Mode     Mode    `json:"mode"`
	Model    string  `json:"model"`
	Samples  int     `json:"samples"`
	Correct  int     `json:"correct"`
	Accuracy float64 `json:"accuracy"`
	// Classes holds precision and recall of terminates and diverges.
	Classes map[string]ClassStats `json:"classes"`
	// Confusion counts samples by label, then answer ("" when none
	// could be read).
	Confusion map[string]map[string]int `json:"confusion"`
	// Unconfirmed counts "diverges" answers for diverging programs that
	// ended before the timeout (wrong by CWM's rule).
	Unconfirmed int `json:"unconfirmed"`
	// Constant is the accuracy of always answering each class.
	Constant             map[string]float64 `json:"constant"`
	MeanCompletionTokens float64            `json:"mean_completion_tokens"`
	Missing              int                `json:"missing"`
	ModelErrors          int                `json:"model_errors"`
	Resumed              int                `json:"resumed"`
	Seconds              float64            `json:"seconds"`
}

// SummarizeHalt computes the summary of the lines of out whose keys are
// in want (all of them when want is nil).
func SummarizeHalt(out string, want map[string]bool) (*HaltSummary, error) {
	s := &HaltSummary{Classes: map[string]ClassStats{}, Constant: map[string]float64{},
		Confusion: map[string]map[string]int{Terminates: {}, Diverges: {}}}
	seen := map[string]bool{}
	var tp = map[string]int{}
	var tokens int64
	err := jsonl.Decode(out, func(_ int, l HaltLine) error {
		k := key(l.ID, l.Sample)
		if want != nil && !want[k] || seen[k] {
			return nil
		}
		seen[k] = true
		s.Samples++
		s.Confusion[l.Label][l.Answer]++
		tokens += l.CompletionTokens
		if l.Correct {
			s.Correct++
			tp[l.Answer]++
		}
		if l.Answer == Diverges && l.Label == Diverges && !l.Correct {
			s.Unconfirmed++
		}
		if s.Mode == "" {
			s.Mode, s.Model = l.Mode, l.Model
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if want != nil {
		s.Missing = len(want) - len(seen)
	}
	if s.Samples == 0 {
		return s, nil
	}
	s.Accuracy = float64(s.Correct) / float64(s.Samples)
	s.MeanCompletionTokens = float64(tokens) / float64(s.Samples)
	for _, c := range []string{Terminates, Diverges} {
		cs := ClassStats{Predicted: s.Confusion[Terminates][c] + s.Confusion[Diverges][c]}
		for _, n := range s.Confusion[c] {
			cs.Actual += n
		}
		if cs.Predicted > 0 {
			cs.Precision = float64(tp[c]) / float64(cs.Predicted)
		}
		if cs.Actual > 0 {
			cs.Recall = float64(tp[c]) / float64(cs.Actual)
		}
		s.Classes[c] = cs
		s.Constant[c] = float64(cs.Actual) / float64(s.Samples)
	}
	return s, nil
}

// Write prints the summary for people.
func (s *HaltSummary) Write(w io.Writer) {
	fmt.Fprintf(w, "halt %s (%s): %d samples, %d right, accuracy %.1f%% (constant: terminates %.1f%%, diverges %.1f%%)\n",
		s.Mode, s.Model, s.Samples, s.Correct, 100*s.Accuracy, 100*s.Constant[Terminates], 100*s.Constant[Diverges])
	for _, c := range []string{Terminates, Diverges} {
		cs := s.Classes[c]
		fmt.Fprintf(w, "  %-10s precision %.1f%% recall %.1f%% (%d answered, %d labelled)\n", c, 100*cs.Precision, 100*cs.Recall, cs.Predicted, cs.Actual)
	}
	fmt.Fprintf(w, "confusion (label: answers terminates/diverges/none): terminates %d/%d/%d, diverges %d/%d/%d\n",
		s.Confusion[Terminates][Terminates], s.Confusion[Terminates][Diverges], s.Confusion[Terminates][""],
		s.Confusion[Diverges][Terminates], s.Confusion[Diverges][Diverges], s.Confusion[Diverges][""])
	fmt.Fprintf(w, "tokens per answer %.1f\n", s.MeanCompletionTokens)
	if s.Unconfirmed > 0 || s.Missing > 0 || s.ModelErrors > 0 || s.Resumed > 0 {
		fmt.Fprintf(w, "unconfirmed %d, resumed %d, missing %d, model errors %d\n", s.Unconfirmed, s.Resumed, s.Missing, s.ModelErrors)
	}
}
