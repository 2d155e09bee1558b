package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"cwm/internal/command"
	"cwm/internal/dedup"
	"cwm/internal/jsonl"
)

type dedupCmd struct {
	in, out, dropped string
	threshold        float64
	groupBy          string
	json             bool
}

func (*dedupCmd) Name() string { return "dedup" }
func (*dedupCmd) Synopsis() string {
	return "remove near-duplicate trajectories per repository (MinHash LSH)"
}
func (*dedupCmd) Usage() string {
	return `--in TRAJ.jsonl --out KEPT.jsonl [flags]
Removes near-duplicate trajectories as CWM's ForagerAgent data was
(CWM-SPEC 3): per repository, over the concatenated actions, so that every
pair of kept trajectories has a Jaccard similarity below --threshold.

A trajectory's text is its steps' actions (steps[].action), or its
assistant messages when it has no steps, joined by newlines; similarity is
the Jaccard similarity of the sets of 5-word shingles. Lines are taken in
input order and a line is dropped when it is at least --threshold similar
to a kept line of its group; MinHash LSH proposes the candidates and the
exact Jaccard similarity decides. The group is the line's --group-by field
("repo" by default), or else the repository its task id names
("owner__name-123" is owner/name, otherwise the id up to its last "-").

Kept lines are written to --out unchanged and in input order; each dropped
one is reported (to --dropped as JSONL, with --json, or the first few on
stdout) with the line it duplicates and their Jaccard similarity. The
result is deterministic. See docs/rewards.md.`
}

func (c *dedupCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.in, "in", "", "trajectories `file` (JSONL)")
	fs.StringVar(&c.out, "out", "", "`file` to write the kept lines to (replaced)")
	fs.StringVar(&c.dropped, "dropped", "", "`file` to write a JSONL record of each dropped line to (replaced)")
	fs.Float64Var(&c.threshold, "threshold", 0.5, "Jaccard similarity at which a line is a duplicate")
	fs.StringVar(&c.groupBy, "group-by", "repo", "`field` whose value groups lines (else the task id's repository)")
	fs.BoolVar(&c.json, "json", false, "print the report as JSON")
}

// trajectoryText is what dedup reads of a line.
type trajectoryText struct {
	TaskID     string `json:"task_id"`
	InstanceID string `json:"instance_id"`
	Sample     *int   `json:"sample"`
	Steps      []struct {
		Action string `json:"action"`
	} `json:"steps"`
	Messages []struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		ToolCalls []struct {
			Function struct {
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
}

// decodeTrajectoryText decodes the members dedup reads.
func decodeTrajectoryText(fields map[string]json.RawMessage) (trajectoryText, error) {
	var t trajectoryText
	for key, dst := range map[string]any{
		"task_id": &t.TaskID, "instance_id": &t.InstanceID, "sample": &t.Sample,
		"steps": &t.Steps, "messages": &t.Messages,
	} {
		if raw, ok := fields[key]; ok {
			if err := jsonl.Unmarshal(raw, dst); err != nil {
				return t, fmt.Errorf("field %q: %w", key, err)
			}
		}
	}
	return t, nil
}

// text is the concatenated actions: the steps' actions, or the assistant
// messages (with their native tool calls' arguments) when there are no
// steps.
func (t trajectoryText) text() string {
	var parts []string
	for _, s := range t.Steps {
		parts = append(parts, s.Action)
	}
	if len(t.Steps) == 0 {
		for _, m := range t.Messages {
			if m.Role != "assistant" {
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

// repoOfID is the repository a task id names: SWE-bench's
// "owner__name-123" is "owner/name"; other ids lose their last
// "-suffix".
func repoOfID(id string) string {
	if i := strings.LastIndexByte(id, '-'); i > 0 {
		id = id[:i]
	}
	if owner, name, ok := strings.Cut(id, "__"); ok {
		return owner + "/" + name
	}
	return id
}

// droppedLine is the record of one dropped line.
type droppedLine struct {
	Line          int     `json:"line"`
	ID            string  `json:"id"`
	Group         string  `json:"group"`
	DuplicateLine int     `json:"duplicate_of_line"`
	DuplicateID   string  `json:"duplicate_of_id"`
	Jaccard       float64 `json:"jaccard"`
}

type dedupReport struct {
	Lines     int           `json:"lines"`
	Kept      int           `json:"kept"`
	Groups    int           `json:"groups"`
	Threshold float64       `json:"threshold"`
	GroupedBy string        `json:"grouped_by"`
	FromID    int           `json:"grouped_by_task_id"` // lines without the field
	Dropped   []droppedLine `json:"dropped"`
}

func (c *dedupCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	if c.in == "" || c.out == "" {
		return command.Usagef("--in and --out are required")
	}
	if !(c.threshold > 0 && c.threshold <= 1) {
		return command.Usagef("--threshold %v is not in (0, 1]", c.threshold)
	}
	var lines [][]byte
	var lineNos []int
	var ids []string
	var items []dedup.Item
	rep := dedupReport{Threshold: c.threshold, GroupedBy: c.groupBy, Dropped: []droppedLine{}}
	err := jsonl.ScanInput(c.in, func(n int, line []byte) error {
		// One pass over the line: its members raw, then only those that
		// matter decoded.
		var fields map[string]json.RawMessage
		if err := jsonl.Unmarshal(line, &fields); err != nil {
			return fmt.Errorf("decode trajectory: %w", err)
		}
		t, err := decodeTrajectoryText(fields)
		if err != nil {
			return fmt.Errorf("decode trajectory: %w", err)
		}
		id := t.TaskID
		if id == "" {
			id = t.InstanceID
		}
		group := groupValue(fields[c.groupBy])
		if group == "" {
			group = repoOfID(id)
			rep.FromID++
		}
		if id == "" {
			id = "line " + strconv.Itoa(n)
		} else if t.Sample != nil {
			id += "#" + strconv.Itoa(*t.Sample)
		}
		items = append(items, dedup.Item{ID: strconv.Itoa(len(items)), Group: group, Text: t.text()})
		lines = append(lines, bytes.Clone(line))
		lineNos = append(lineNos, n)
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return err
	}
	kept, dropped, err := dedup.Dedup(items, dedup.Options{Threshold: c.threshold})
	if err != nil {
		return err
	}
	var out bytes.Buffer
	for _, i := range kept {
		out.Write(lines[i])
		out.WriteByte('\n')
	}
	if err := writeFileAtomic(c.out, out.Bytes()); err != nil {
		return err
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
		dl := droppedLine{Line: lineNos[i], ID: ids[i], Group: items[i].Group, DuplicateLine: lineNos[j], DuplicateID: ids[j], Jaccard: d.Jaccard}
		rep.Dropped = append(rep.Dropped, dl)
		b, _ := json.Marshal(dl)
		recs.Write(append(b, '\n'))
	}
	if c.dropped != "" {
		if err := writeFileAtomic(c.dropped, recs.Bytes()); err != nil {
			return err
		}
	}
	if c.json {
		return writeJSON(e.Stdout, rep)
	}
	return c.printReport(e, rep)
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

// dedupShown is how many groups, and dropped lines when they are not
// written to a file, the text report lists.
const dedupShown = 20

func (c *dedupCmd) printReport(e *command.Env, rep dedupReport) error {
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
		if i == dedupShown {
			fmt.Fprintf(&b, "  ... %d more groups\n", len(names)-dedupShown)
			break
		}
		fmt.Fprintf(&b, "  %s: %d dropped\n", g, perGroup[g])
	}
	if c.dropped != "" {
		fmt.Fprintf(&b, "dropped lines: %s\n", c.dropped)
	} else {
		for i, d := range rep.Dropped {
			if i == dedupShown {
				fmt.Fprintf(&b, "... %d more (see --dropped)\n", len(rep.Dropped)-dedupShown)
				break
			}
			fmt.Fprintf(&b, "line %d (%s) duplicates line %d (%s): Jaccard %.3f\n", d.Line, d.ID, d.DuplicateLine, d.DuplicateID, d.Jaccard)
		}
	}
	_, err := fmt.Fprint(e.Stdout, b.String())
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
