package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"cwm/internal/dedup"
	"cwm/internal/jsonl"
	"cwm/internal/trace"
	"cwm/internal/traceline"
	"cwm/internal/trajectory"
)

// record is one input line as an export needs it: the repository it comes
// from (for decontamination and the split), the text near-duplicates are
// found in, and its rows; or the reason it is skipped.
type record[R any] struct {
	repo, text string
	rows       []R
	skip       string
}

// kindOf names what a line that is not what its reader wanted is, from
// the fields that tell trajectories and traces apart; "" when neither.
func kindOf(hasTask, hasMessages, hasContext, hasFrames bool) string {
	switch {
	case hasTask && hasMessages:
		return "a trajectory (cwm forage)"
	case hasContext && hasFrames:
		return "a trace (cwm trace func or trace repo)"
	}
	return ""
}

// trajectoryLine is a line of a trajectories file, decoded once: the
// trajectory and the fields that would make it a trace. Every other field
// is ignored, so lines with fields added later still read.
type trajectoryLine struct {
	trajectory.Trajectory
	// Repo, when the line has it, is the repository (as cwm dedup's
	// --group-by reads it); else it is the one the task id names.
	Repo    string          `json:"repo"`
	Context *string         `json:"context"`
	Frames  json.RawMessage `json:"frames"`
}

// decodeTrajectory reads a trajectory line; a line of another kind is an
// error that says what it is.
func decodeTrajectory(line []byte) (*trajectory.Trajectory, string, error) {
	var t trajectoryLine
	if err := jsonl.Unmarshal(line, &t); err != nil {
		return nil, "", fmt.Errorf("decode trajectory: %w", err)
	}
	if t.TaskID == "" || t.Messages == nil {
		if k := kindOf(t.TaskID != "", t.Messages != nil, t.Context != nil, t.Frames != nil); k != "" {
			return nil, "", fmt.Errorf("the line is %s, not a trajectory: cwm export pretrain reads traces", k)
		}
		return nil, "", errors.New("unknown record: a trajectory line has task_id and messages")
	}
	repo := t.Repo
	if repo == "" {
		repo = dedup.RepoOfID(t.TaskID)
	}
	return &t.Trajectory, repo, nil
}

// dedupText is what near-duplicates are found in, when dedup is on.
func dedupText(withText bool, text func() string) string {
	if !withText {
		return ""
	}
	return text()
}

func sftRecord(mask Mask, seed uint64, withText bool) func(string, []byte) (record[SFTRow], error) {
	return func(_ string, line []byte) (record[SFTRow], error) {
		tr, repo, err := decodeTrajectory(line)
		if err != nil {
			return record[SFTRow]{}, err
		}
		if len(tr.Messages) == 0 {
			return record[SFTRow]{skip: "no messages"}, nil
		}
		text := dedupText(withText, func() string { return dedup.Text(tr) })
		return record[SFTRow]{repo: repo, text: text, rows: []SFTRow{sftRow(tr, repo, mask, seed)}}, nil
	}
}

func tripletRecord(stateBytes int, withText bool) func(string, []byte) (record[TripletRow], error) {
	return func(_ string, line []byte) (record[TripletRow], error) {
		tr, repo, err := decodeTrajectory(line)
		if err != nil {
			return record[TripletRow]{}, err
		}
		rows := tripletRows(tr, repo, stateBytes)
		if len(rows) == 0 {
			return record[TripletRow]{skip: "no answered agent turn"}, nil
		}
		text := dedupText(withText, func() string { return dedup.Text(tr) })
		return record[TripletRow]{repo: repo, text: text, rows: rows}, nil
	}
}

// traceLine is a line of a traces file: cwm trace func's records and cwm
// trace repo's episodes (which name their test).
type traceLine struct {
	traceline.Line
	Test *string `json:"test"`
	Text string  `json:"text"`
	Repo string  `json:"repo"`
}

// probe is what tells a trace line from other lines: traceline's strings
// and slices cannot tell a field absent from one empty, so pretrain reads
// these first (a trace is one short line to decode twice; trajectories,
// the bulk of an export, are decoded once).
type probe struct {
	TaskID   *string         `json:"task_id"`
	Messages json.RawMessage `json:"messages"`
	Context  *string         `json:"context"`
	Frames   json.RawMessage `json:"frames"`
}

// pretrainRecord reads a trace line and encodes its frames with
// trace.Encode, the one encoder of CWM's text. A line whose own text
// differs from its frames' is corrupt, and an error.
func pretrainRecord(path string, line []byte) (record[PretrainRow], error) {
	var p probe
	if err := jsonl.Unmarshal(line, &p); err != nil {
		return record[PretrainRow]{}, err
	}
	if p.Context == nil || p.Frames == nil {
		if k := kindOf(p.TaskID != nil, p.Messages != nil, p.Context != nil, p.Frames != nil); k != "" {
			return record[PretrainRow]{}, fmt.Errorf("the line is %s, not a trace: cwm export sft and triplets read trajectories", k)
		}
		return record[PretrainRow]{}, errors.New("unknown record: a trace line has context and frames")
	}
	var l traceLine
	if err := jsonl.Unmarshal(line, &l); err != nil {
		return record[PretrainRow]{}, fmt.Errorf("decode trace: %w", err)
	}
	if l.ID == "" {
		return record[PretrainRow]{}, errors.New("trace without id")
	}
	if !traceline.Status(l.Status).Complete() || len(l.Frames) == 0 {
		return record[PretrainRow]{skip: "status " + l.Status + " (incomplete trace)"}, nil
	}
	text := trace.Encode(trace.Trace{Context: l.Context, Frames: l.Frames})
	if l.Text != "" && l.Text != text {
		return record[PretrainRow]{}, fmt.Errorf("trace %s: its frames do not encode to its text (cwm trace check says more)", l.ID)
	}
	kind := "function"
	if l.Test != nil {
		kind = "episode"
	}
	repo := l.Repo
	if repo == "" {
		repo = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return record[PretrainRow]{repo: repo, text: text, rows: []PretrainRow{{ID: l.ID, Kind: kind, Repo: repo, Status: l.Status, Text: text}}}, nil
}
