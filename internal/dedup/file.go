package dedup

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/model"
	"cwm/internal/trajectory"
)

// FileOptions configure File: near-duplicate removal over a JSONL file of
// trajectories (cwm dedup).
type FileOptions struct {
	// In holds the trajectories (or predictions: lines with an
	// instance_id); Out gets the kept lines, unchanged and in input order
	// (replaced).
	In, Out string
	// Dropped, when set, gets a record of each dropped line (replaced).
	Dropped string
	// Threshold is the Jaccard similarity at which a line is a duplicate
	// (default 0.5).
	Threshold float64
	// GroupBy is the field whose value groups lines ("repo" by default);
	// a line without it is grouped by the repository its task id names.
	GroupBy string
}

// DroppedLine is the record of one dropped line.
type DroppedLine struct {
	Line          int     `json:"line"`
	ID            string  `json:"id"`
	Group         string  `json:"group"`
	DuplicateLine int     `json:"duplicate_of_line"`
	DuplicateID   string  `json:"duplicate_of_id"`
	Jaccard       float64 `json:"jaccard"`
}

// Report is what File did.
type Report struct {
	Lines     int           `json:"lines"`
	Kept      int           `json:"kept"`
	Groups    int           `json:"groups"`
	Threshold float64       `json:"threshold"`
	GroupedBy string        `json:"grouped_by"`
	FromID    int           `json:"grouped_by_task_id"` // lines without the field
	Dropped   []DroppedLine `json:"dropped"`

	droppedFile string // for Write
}

// line is what File reads of an input line: a trajectory, or a
// prediction's instance id.
type line struct {
	trajectory.Trajectory
	InstanceID string `json:"instance_id"`
}

// File removes the near-duplicates of opts.In (Dedup over each line's
// Text) and writes the kept lines to opts.Out. Lines are held in memory.
func File(ctx context.Context, opts FileOptions) (*Report, error) {
	if opts.Threshold == 0 {
		opts.Threshold = 0.5
	}
	if opts.GroupBy == "" {
		opts.GroupBy = "repo"
	}
	if !(opts.Threshold > 0 && opts.Threshold <= 1) {
		return nil, errkind.Errorf(errkind.Usage, "threshold %v is not in (0, 1]", opts.Threshold)
	}
	var lines [][]byte
	var lineNos []int
	var ids []string
	var items []Item
	rep := &Report{Threshold: opts.Threshold, GroupedBy: opts.GroupBy, Dropped: []DroppedLine{}, droppedFile: opts.Dropped}
	err := jsonl.ScanInput(opts.In, func(n int, raw []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var fields map[string]json.RawMessage
		if err := jsonl.Unmarshal(raw, &fields); err != nil {
			return fmt.Errorf("decode trajectory: %w", err)
		}
		var l line
		if err := jsonl.Unmarshal(raw, &l); err != nil {
			return fmt.Errorf("decode trajectory: %w", err)
		}
		id := l.TaskID
		if id == "" {
			id = l.InstanceID
		}
		group := groupValue(fields[opts.GroupBy])
		if group == "" {
			group = RepoOfID(id)
			rep.FromID++
		}
		if id == "" {
			id = "line " + strconv.Itoa(n)
		} else if _, ok := fields["sample"]; ok {
			id += "#" + strconv.Itoa(l.Sample)
		}
		items = append(items, Item{ID: strconv.Itoa(len(items)), Group: group, Text: Text(&l.Trajectory)})
		lines = append(lines, bytes.Clone(raw))
		lineNos = append(lineNos, n)
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return nil, err
	}
	kept, dropped, err := Dedup(items, Options{Threshold: opts.Threshold})
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, i := range kept {
		out.Write(lines[i])
		out.WriteByte('\n')
	}
	if err := writeFileAtomic(opts.Out, out.Bytes()); err != nil {
		return nil, err
	}
	groups := map[string]bool{}
	for _, it := range items {
		groups[it.Group] = true
	}
	rep.Lines, rep.Kept, rep.Groups = len(items), len(kept), len(groups)
	var recs bytes.Buffer
	for _, d := range dropped {
		i, _ := strconv.Atoi(d.ID)
		j, _ := strconv.Atoi(d.DuplicateOf)
		dl := DroppedLine{Line: lineNos[i], ID: ids[i], Group: items[i].Group, DuplicateLine: lineNos[j], DuplicateID: ids[j], Jaccard: d.Jaccard}
		rep.Dropped = append(rep.Dropped, dl)
		b, _ := json.Marshal(dl)
		recs.Write(append(b, '\n'))
	}
	if opts.Dropped != "" {
		if err := writeFileAtomic(opts.Dropped, recs.Bytes()); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// Text is a trajectory's concatenated actions, what near-duplicates are
// found in: its steps' actions, or its assistant messages (with their
// native tool calls' arguments) when it has no steps, joined by newlines.
func Text(tr *trajectory.Trajectory) string {
	var parts []string
	for _, s := range tr.Steps {
		parts = append(parts, s.Action)
	}
	if len(tr.Steps) == 0 {
		for _, m := range tr.Messages {
			if m.Role != model.RoleAssistant {
				continue
			}
			parts = append(parts, m.Content)
			for _, tc := range m.ToolCalls {
				parts = append(parts, tc.Function.Arguments)
			}
		}
	}
	return strings.Join(parts, "\n")
}

// RepoOfID is the repository a task id names: SWE-bench's
// "owner__name-123" is "owner/name"; other ids lose their last
// "-suffix".
func RepoOfID(id string) string {
	if i := strings.LastIndexByte(id, '-'); i > 0 {
		id = id[:i]
	}
	if owner, name, ok := strings.Cut(id, "__"); ok {
		return owner + "/" + name
	}
	return id
}

// groupValue is a field's value as a group name: a string as it is, any
// other JSON value as its text; "" when absent, null or empty.
func groupValue(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// shown is how many groups, and dropped lines when they are not written
// to a file, the text report lists.
const shown = 20

// Write prints the report for people.
func (rep *Report) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "kept %d of %d lines (%d dropped) in %d groups by %s, Jaccard threshold %v\n",
		rep.Kept, rep.Lines, len(rep.Dropped), rep.Groups, rep.GroupedBy, rep.Threshold)
	if rep.FromID > 0 {
		fmt.Fprintf(&b, "%d lines had no %s field: grouped by their task id's repository\n", rep.FromID, rep.GroupedBy)
	}
	perGroup := map[string]int{}
	for _, d := range rep.Dropped {
		perGroup[d.Group]++
	}
	names := make([]string, 0, len(perGroup))
	for g := range perGroup {
		names = append(names, g)
	}
	// Most dropped first: with thousands of repositories, the top ones
	// are what a reader wants to see.
	sort.Slice(names, func(i, j int) bool {
		if perGroup[names[i]] != perGroup[names[j]] {
			return perGroup[names[i]] > perGroup[names[j]]
		}
		return names[i] < names[j]
	})
	for i, g := range names {
		if i == shown {
			fmt.Fprintf(&b, "  ... %d more groups\n", len(names)-shown)
			break
		}
		fmt.Fprintf(&b, "  %s: %d dropped\n", g, perGroup[g])
	}
	if rep.droppedFile != "" {
		fmt.Fprintf(&b, "dropped lines: %s\n", rep.droppedFile)
	} else {
		for i, d := range rep.Dropped {
			if i == shown {
				fmt.Fprintf(&b, "... %d more (see --dropped)\n", len(rep.Dropped)-shown)
				break
			}
			fmt.Fprintf(&b, "line %d (%s) duplicates line %d (%s): Jaccard %.3f\n", d.Line, d.ID, d.DuplicateLine, d.DuplicateID, d.Jaccard)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFileAtomic replaces path with data, so that a crash never leaves
// half a file where a whole one was.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
