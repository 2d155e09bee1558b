package cli

// What cwm reward writes: output lines (the input line's members in their
// order, with the grading's added) and the summary.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"cwm/internal/command"
	"cwm/internal/jsonl"
	"cwm/internal/reward"
)

// field is one member of a JSON object, kept in its order.
type field struct {
	key   string
	value json.RawMessage
}

// objectFields splits a JSON object into its members in order, so that an
// output line keeps the input's fields as they were.
func objectFields(line []byte) ([]field, error) {
	if !json.Valid(line) {
		return nil, jsonl.Unmarshal(line, new(any)) // says where it is invalid
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var fields []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		fields = append(fields, field{tok.(string), v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return fields, nil
}

// setField replaces the member key, or appends it.
func setField(fields []field, key string, v any) []field {
	raw, err := json.Marshal(v)
	if err != nil {
		raw = []byte("null") // only plain data is set; cannot happen
	}
	for i := range fields {
		if fields[i].key == key {
			fields[i].value = raw
			return fields
		}
	}
	return append(fields, field{key, raw})
}

func marshalFields(fields []field) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(f.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// outputLine is j's input line with the grading's fields set.
func (c *rewardCmd) outputLine(j *job, advantage *float64) []byte {
	r := j.result
	f := j.fields
	if j.isPred {
		f = setField(f, "sample", j.sample)
	}
	f = setField(f, "resolved", r.Resolved)
	f = setField(f, "reward", j.reward)
	var sim *float64
	var perFile map[string]float64
	details := map[string]any{
		"env_id": j.t.EnvID, "reward_kind": c.mapping.Kind, "similarity_threshold": c.mapping.Threshold,
		"reason": r.Reason, "apply_log": r.ApplyLog, "test_note": r.TestNote,
		"similarity_error": r.SimilarityError, "seconds": r.Seconds,
	}
	if c.mapping.Kind == "cwm" && c.mapping.Scale > 0 {
		details["cwm_scale"] = c.mapping.Scale
	}
	if s := r.Similarity; s != nil {
		sim, perFile = &s.Mean, s.PerFile
		details["predicted_error"] = s.PredictedError
		if len(s.Ignored) > 0 {
			details["ignored_files"] = s.Ignored
		}
	}
	for k, v := range details {
		if v == "" {
			delete(details, k)
		}
	}
	f = setField(f, "similarity", sim)
	f = setField(f, "similarity_per_file", perFile)
	tests := r.Tests
	if tests == nil {
		tests = []reward.TestOutcome{}
	}
	f = setField(f, "hidden_tests", tests)
	f = setField(f, "apply", r.Apply)
	f = setField(f, "graded_patch", j.from)
	f = setField(f, "advantage", advantage)
	f = setField(f, "grading", details)
	return marshalFields(f)
}

// unknownTasks counts lines per task id missing from the tasks file.
type unknownTasks map[string]int

func (u unknownTasks) lines() int {
	n := 0
	for _, c := range u {
		n += c
	}
	return n
}

func (u unknownTasks) String() string {
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

// taskSummary is the outcome of one task's scored lines.
type taskSummary struct {
	Task       string  `json:"task"`
	Lines      int     `json:"lines"`
	Resolved   int     `json:"resolved"`
	MeanReward float64 `json:"mean_reward"`
}

// rewardSummary describes the whole output file after the run.
type rewardSummary struct {
	Lines          int            `json:"lines"`
	GradedNow      int            `json:"graded_now"`
	ScoredBefore   int            `json:"scored_before"`
	Resolved       int            `json:"resolved"`
	ResolvedRate   float64        `json:"resolved_rate"`
	MeanReward     float64        `json:"mean_reward"`
	MeanSimilarity *float64       `json:"mean_similarity"`
	Tasks          []taskSummary  `json:"tasks"`
	UnknownTasks   map[string]int `json:"unknown_tasks"`
	Errors         []lineError    `json:"errors"`
}

// summarize reads back --out, which holds this run's lines and earlier
// runs', and prints the totals and the per-task outcomes.
func (c *rewardCmd) summarize(e *command.Env, now, before int, unknown unknownTasks, errs []lineError) error {
	sum := rewardSummary{GradedNow: now, ScoredBefore: before, UnknownTasks: unknown, Errors: errs, Tasks: []taskSummary{}}
	if sum.Errors == nil {
		sum.Errors = []lineError{}
	}
	perTask := map[string]*taskSummary{}
	simSum, simN := 0.0, 0
	err := jsonl.Scan(c.out, func(_ int, line []byte) error {
		var s scoredLine
		if err := json.Unmarshal(line, &s); err != nil {
			return err
		}
		id, _, _, _ := s.identity()
		ts := perTask[id]
		if ts == nil {
			ts = &taskSummary{Task: id}
			perTask[id] = ts
		}
		ts.Lines++
		ts.MeanReward += s.Reward
		sum.Lines++
		sum.MeanReward += s.Reward
		if s.Resolved {
			ts.Resolved++
			sum.Resolved++
		}
		if s.Similarity != nil {
			simSum += *s.Similarity
			simN++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("summarize: %w", err)
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
	if c.json {
		return writeJSON(e.Stdout, sum)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d lines scored (%d now, %d before)", c.out, sum.Lines, sum.GradedNow, sum.ScoredBefore)
	if n := unknown.lines(); n > 0 {
		fmt.Fprintf(&b, ", %d skipped (unknown task)", n)
	}
	if len(errs) > 0 {
		fmt.Fprintf(&b, ", %d not graded (errors above)", len(errs))
	}
	fmt.Fprintf(&b, "\nresolved %d/%d (%.1f%%), mean reward %.3f (%s)", sum.Resolved, sum.Lines, 100*sum.ResolvedRate, sum.MeanReward, c.mapping.Kind)
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
	_, err = fmt.Fprint(e.Stdout, b.String())
	return err
}
