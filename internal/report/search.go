package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/search"
)

// KindSearch is a cwm search output directory (its summary.json, tree
// and best trajectories), the one input that is not a file.
const KindSearch Kind = "search"

// SearchSection is one cwm search output directory: its summary's
// entries and their totals.
type SearchSection struct {
	Dir   string           `json:"dir"`
	Tasks []search.Summary `json:"tasks"`
	// TreeLines counts tree.jsonl's lines, which should be Total.Nodes.
	TreeLines int          `json:"tree_lines"`
	Total     SearchTotals `json:"total"`
}

// SearchTotals adds up a search's tasks. Resolved counts the best
// trajectories the real grading resolved; PredictedResolved those the
// reward model (--sim-reward) predicted resolved, not graded for real.
type SearchTotals struct {
	Tasks           int     `json:"tasks"`
	Failed          int     `json:"failed"`
	Exhausted       int     `json:"exhausted"`
	Nodes           int     `json:"nodes"`
	MaxDepth        int     `json:"max_depth"`
	ModelCalls      int     `json:"model_calls"`
	ValueCalls      int     `json:"value_calls"`
	Execs           int     `json:"real_executions"`
	ExecsAvoided    int     `json:"executions_avoided"`
	WorldModelCalls int     `json:"world_model_calls"`
	Gradings        int     `json:"gradings"`
	Resolved        int     `json:"resolved"`
	ResolvedRate    float64 `json:"resolved_rate"`
	// PredictedResolved counts best trajectories the reward model
	// predicted resolved (--sim-reward), not graded for real.
	PredictedResolved int `json:"predicted_resolved"`
}

// IsSearchDir reports whether path is a directory holding a search's
// summary.json.
func IsSearchDir(path string) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.IsDir() {
		return false
	}
	_, err = os.Stat(filepath.Join(path, search.SummaryFile))
	return err == nil
}

// ReadSearch reads a cwm search output directory.
func ReadSearch(dir string) (*SearchSection, error) {
	b, err := os.ReadFile(filepath.Join(dir, search.SummaryFile))
	if err != nil {
		return nil, errkind.Wrap(errkind.Input, fmt.Errorf("read the search summary: %w", err))
	}
	sec := &SearchSection{Dir: dir}
	if err := json.Unmarshal(b, &sec.Tasks); err != nil {
		return nil, errkind.Errorf(errkind.Input, "%s: not a search summary (a JSON array of tasks): %v", filepath.Join(dir, search.SummaryFile), err)
	}
	t := &sec.Total
	for _, s := range sec.Tasks {
		t.Tasks++
		if s.Error != "" {
			t.Failed++
		}
		if s.Exhausted != "" {
			t.Exhausted++
		}
		t.Nodes += s.Nodes
		t.MaxDepth = max(t.MaxDepth, s.MaxDepth)
		t.ModelCalls += s.ModelCalls
		t.ValueCalls += s.ValueCalls
		t.Execs += s.Execs
		t.ExecsAvoided += s.ExecsAvoided
		t.WorldModelCalls += s.WorldModelCalls
		t.Gradings += s.Gradings
	}
	// Resolved is the real grading's verdict in the best trajectories; the
	// summary's best_reward may be a prediction.
	err = jsonl.DecodeInput(filepath.Join(dir, search.TrajectoriesFile), func(_ int, tr struct {
		Resolved *bool `json:"resolved"`
		Sim      *struct {
			PredictedReward *float64 `json:"predicted_reward"`
		} `json:"sim"`
	}) error {
		switch {
		case tr.Resolved != nil && *tr.Resolved:
			t.Resolved++
		case tr.Sim != nil && tr.Sim.PredictedReward != nil && *tr.Sim.PredictedReward >= 1:
			t.PredictedResolved++
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	if t.Tasks > 0 {
		t.ResolvedRate = float64(t.Resolved) / float64(t.Tasks)
	}
	err = jsonl.ScanInput(filepath.Join(dir, search.TreeFile), func(int, []byte) error {
		sec.TreeLines++
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return sec, nil
}

// Write prints the section as a table: a row per task, then the totals.
func (s *SearchSection) Write(w io.Writer) error {
	t := s.Total
	fmt.Fprintf(w, "search %s: %d tasks, %d resolved (%.1f%%)", s.Dir, t.Tasks, t.Resolved, 100*t.ResolvedRate)
	if t.PredictedResolved > 0 {
		fmt.Fprintf(w, ", %d more predicted resolved", t.PredictedResolved)
	}
	if t.Failed > 0 {
		fmt.Fprintf(w, ", %d failed", t.Failed)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "task\talgo\tnodes\tdepth\tmodel calls\tvalue calls\treal executions\texecutions avoided\tgradings\tbest reward\tended")
	row := func(id, algo string, nodes, depth, calls, values, execs, avoided, gradings int, best, ended string) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", id, algo, nodes, depth, calls, values, execs, avoided, gradings, best, ended)
	}
	for _, x := range s.Tasks {
		best, ended := "-", "done"
		if x.BestReward != nil {
			best = fmt.Sprint(*x.BestReward)
		}
		switch {
		case x.Error != "":
			ended = "failed: " + strings.SplitN(x.Error, "\n", 2)[0]
		case x.Exhausted != "":
			ended = x.Exhausted + " budget"
		}
		row(x.TaskID, x.Algo, x.Nodes, x.MaxDepth, x.ModelCalls, x.ValueCalls, x.Execs, x.ExecsAvoided, x.Gradings, best, ended)
	}
	row("total", "", t.Nodes, t.MaxDepth, t.ModelCalls, t.ValueCalls, t.Execs, t.ExecsAvoided, t.Gradings,
		fmt.Sprintf("%d resolved", t.Resolved), fmt.Sprintf("%d exhausted", t.Exhausted))
	return tw.Flush()
}

// Text is Write's table as a string, for the page.
func (s *SearchSection) Text() string {
	var b strings.Builder
	s.Write(&b)
	return b.String()
}
