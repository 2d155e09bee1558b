package search

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"cwm/internal/jsonl"
)

// The files of a search's output directory (docs/sim.md, "Search").
const (
	TrajectoriesFile = "trajectories.jsonl"
	TreeFile         = "tree.jsonl"
	SummaryFile      = "summary.json"
)

// Output writes a search's files as each task finishes, so that a task
// that fails later (a model endpoint down, a sandbox that does not start)
// loses nothing already searched: its best trajectory and its tree are
// appended, and summary.json is rewritten whole with one entry per task
// done so far, failed ones with their error.
type Output struct {
	dir        string
	best, tree *jsonl.Writer
	sums       []Summary
}

// Create starts the output in dir, emptying the files of an earlier run
// (a search is not resumed).
func Create(dir string) (*Output, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make the output directory: %w", err)
	}
	o := &Output{dir: dir, sums: []Summary{}}
	for _, f := range []struct {
		name string
		w    **jsonl.Writer
	}{{TrajectoriesFile, &o.best}, {TreeFile, &o.tree}} {
		p := filepath.Join(dir, f.name)
		if err := os.Truncate(p, 0); err != nil && !os.IsNotExist(err) {
			o.Close()
			return nil, fmt.Errorf("empty %s: %w", p, err)
		}
		w, err := jsonl.Append(p)
		if err != nil {
			o.Close()
			return nil, err
		}
		*f.w = w
	}
	if err := o.writeSummary(); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

// Add writes a finished task's best trajectory, tree and summary.
func (o *Output) Add(res *Result) error {
	if err := o.best.Write(res.Best); err != nil {
		return fmt.Errorf("write the best trajectory of %s: %w", res.Summary.TaskID, err)
	}
	for _, n := range res.Tree {
		if err := o.tree.Write(n); err != nil {
			return fmt.Errorf("write the search tree of %s: %w", res.Summary.TaskID, err)
		}
	}
	o.sums = append(o.sums, res.Summary)
	return o.writeSummary()
}

// Fail records a task whose search failed: a summary entry with the error
// and no best node; nothing in the other files.
func (o *Output) Fail(taskID, algo string, err error) error {
	o.sums = append(o.sums, Summary{TaskID: taskID, Algo: algo, BestNode: -1, Error: err.Error()})
	return o.writeSummary()
}

// Summaries are the entries written so far, in task order.
func (o *Output) Summaries() []Summary { return o.sums }

// Failed names the tasks recorded by Fail.
func (o *Output) Failed() []string {
	var ids []string
	for _, s := range o.sums {
		if s.Error != "" {
			ids = append(ids, s.TaskID)
		}
	}
	return ids
}

func (o *Output) writeSummary() error {
	return jsonl.Replace(filepath.Join(o.dir, SummaryFile), func(w *bufio.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(o.sums)
	})
}

// Close closes the files; what was written stays. It is idempotent.
func (o *Output) Close() error {
	var first error
	for _, w := range []*jsonl.Writer{o.best, o.tree} {
		if w == nil { // not opened, or closed already
			continue
		}
		if err := w.Close(); err != nil && first == nil {
			first = err
		}
	}
	o.best, o.tree = nil, nil
	return first
}
