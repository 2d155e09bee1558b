package reward

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"cwm/internal/jsonl"
)

// UnknownTasks counts lines per task id missing from the tasks file.
type UnknownTasks map[string]int

// Lines is how many lines name an unknown task.
func (u UnknownTasks) Lines() int {
	n := 0
	for _, c := range u {
		n += c
	}
	return n
}

// String lists the unknown ids, sorted, the first ten of them.
func (u UnknownTasks) String() string {
	ids := make([]string, 0, len(u))
	for id := range u {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if len(ids) > 10 {
		ids = append(ids[:10], fmt.Sprintf("and %d more", len(ids)-10))
	}
	return strings.Join(ids, ", ")
}

// TaskSummary is the outcome of one task's scored lines.
type TaskSummary struct {
	Task       string  `json:"task"`
	Lines      int     `json:"lines"`
	Resolved   int     `json:"resolved"`
	MeanReward float64 `json:"mean_reward"`
}

// ScoreSummary describes the whole output file after a run.
type ScoreSummary struct {
	Lines          int           `json:"lines"`
	GradedNow      int           `json:"graded_now"`
	ScoredBefore   int           `json:"scored_before"`
	Resolved       int           `json:"resolved"`
	ResolvedRate   float64       `json:"resolved_rate"`
	MeanReward     float64       `json:"mean_reward"`
	MeanSimilarity *float64      `json:"mean_similarity"`
	Tasks          []TaskSummary `json:"tasks"`
	UnknownTasks   UnknownTasks  `json:"unknown_tasks"`
	// Errors are the lines not graded: not predictions or trajectories,
	// repeated, or failed to grade.
	Errors []LineError `json:"errors"`

	out, kind string // for Write
}

// summarize reads back Out, which holds this run's lines and earlier
// runs', and totals them.
func (s *Scoring) summarize(now int, errs []LineError) (*ScoreSummary, error) {
	sum := &ScoreSummary{GradedNow: now, ScoredBefore: s.Skipped, UnknownTasks: s.Unknown, Errors: errs,
		Tasks: []TaskSummary{}, out: s.opts.Out, kind: s.opts.Mapping.Kind}
	if sum.Errors == nil {
		sum.Errors = []LineError{}
	}
	perTask := map[string]*TaskSummary{}
	simSum, simN := 0.0, 0
	err := jsonl.Scan(s.opts.Out, func(_ int, line []byte) error {
		c, _, err := decodeCandidate(line)
		if err != nil {
			return err
		}
		id, _, _, _ := c.identity()
		ts := perTask[id]
		if ts == nil {
			ts = &TaskSummary{Task: id}
			perTask[id] = ts
		}
		var r float64
		if c.Reward != nil {
			r = *c.Reward
		}
		ts.Lines++
		ts.MeanReward += r
		sum.Lines++
		sum.MeanReward += r
		if c.Resolved != nil && *c.Resolved {
			ts.Resolved++
			sum.Resolved++
		}
		if c.Similarity != nil {
			simSum += *c.Similarity
			simN++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("summarize: %w", err)
	}
	if sum.Lines > 0 {
		sum.ResolvedRate = float64(sum.Resolved) / float64(sum.Lines)
		sum.MeanReward /= float64(sum.Lines)
	}
	if simN > 0 {
		m := simSum / float64(simN)
		sum.MeanSimilarity = &m
	}
	for _, ts := range perTask {
		ts.MeanReward /= float64(ts.Lines)
		sum.Tasks = append(sum.Tasks, *ts)
	}
	sort.Slice(sum.Tasks, func(a, b int) bool { return sum.Tasks[a].Task < sum.Tasks[b].Task })
	return sum, nil
}

// Write prints the summary for people: the totals and a table per task.
func (sum *ScoreSummary) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d lines scored (%d now, %d before)", sum.out, sum.Lines, sum.GradedNow, sum.ScoredBefore)
	if n := sum.UnknownTasks.Lines(); n > 0 {
		fmt.Fprintf(&b, ", %d skipped (unknown task)", n)
	}
	if len(sum.Errors) > 0 {
		fmt.Fprintf(&b, ", %d not graded (errors above)", len(sum.Errors))
	}
	fmt.Fprintf(&b, "\nresolved %d/%d (%.1f%%), mean reward %.3f (%s)", sum.Resolved, sum.Lines, 100*sum.ResolvedRate, sum.MeanReward, sum.kind)
	if sum.MeanSimilarity != nil {
		fmt.Fprintf(&b, ", mean similarity %.3f", *sum.MeanSimilarity)
	}
	b.WriteString("\n")
	if len(sum.Tasks) > 0 {
		width := len("TASK")
		for _, ts := range sum.Tasks {
			width = max(width, len(ts.Task))
		}
		fmt.Fprintf(&b, "%-*s  %5s  %8s  %11s\n", width, "TASK", "LINES", "RESOLVED", "MEAN REWARD")
		for _, ts := range sum.Tasks {
			fmt.Fprintf(&b, "%-*s  %5d  %8d  %11.3f\n", width, ts.Task, ts.Lines, ts.Resolved, ts.MeanReward)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
