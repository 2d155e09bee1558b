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

// probe is what tells a trajectory line from a trace line. Readers ignore
// every other field, so that lines with fields added later (a trace's
// input_source) still read.
type probe struct {
	TaskID   *string         `json:"task_id"`
	Messages json.RawMessage `json:"messages"`
	Context  *string         `json:"context"`
	Frames   json.RawMessage `json:"frames"`
}

func (p probe) kind() string {
	switch {
	case p.TaskID != nil && p.Messages != nil:
		return "a trajectory (cwm forage)"
	case p.Context != nil && p.Frames != nil:
		return "a trace (cwm trace func or trace repo)"
	}
	return ""
}

// trajectoryLine is a line of a trajectories file.
type trajectoryLine struct {
	trajectory.Trajectory
	// Repo, when the line has it, is the repository (as cwm dedup's
	// --group-by reads it); else it is the one the task id names.
	Repo string `json:"repo"`
}

// decodeTrajectory reads a trajectory line; a line of another kind is an
// error that says what it is.
func decodeTrajectory(line []byte) (*trajectory.Trajectory, string, error) {
	var p probe
	if err := jsonl.Unmarshal(line, &p); err != nil {
		return nil, "", err
	}
	if p.TaskID == nil || p.Messages == nil {
		if k := p.kind(); k != "" {
			return nil, "", fmt.Errorf("the line is %s, not a trajectory: cwm export pretrain reads traces", k)
		}
		return nil, "", errors.New("unknown record: a trajectory line has task_id and messages")
	}
	var t trajectoryLine
	if err := jsonl.Unmarshal(line, &t); err != nil {
		return nil, "", fmt.Errorf("decode trajectory: %w", err)
	}
	repo := t.Repo
	if repo == "" {
		repo = dedup.RepoOfID(t.TaskID)
	}
	return &t.Trajectory, repo, nil
}

func sftRecord(mask Mask, seed uint64) func(string, []byte) (record[SFTRow], error) {
	return func(_ string, line []byte) (record[SFTRow], error) {
		tr, repo, err := decodeTrajectory(line)
		if err != nil {
			return record[SFTRow]{}, err
		}
		if len(tr.Messages) == 0 {
			return record[SFTRow]{skip: "no messages"}, nil
		}
		return record[SFTRow]{repo: repo, text: dedup.Text(tr), rows: []SFTRow{sftRow(tr, repo, mask, seed)}}, nil
	}
}

func tripletRecord(stateBytes int) func(string, []byte) (record[TripletRow], error) {
	return func(_ string, line []byte) (record[TripletRow], error) {
		tr, repo, err := decodeTrajectory(line)
		if err != nil {
			return record[TripletRow]{}, err
		}
		rows := tripletRows(tr, repo, stateBytes)
		if len(rows) == 0 {
			return record[TripletRow]{skip: "no answered agent turn"}, nil
		}
		return record[TripletRow]{repo: repo, text: dedup.Text(tr), rows: rows}, nil
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

// pretrainRecord reads a trace line and encodes its frames with
// trace.Encode, the one encoder of CWM's text. A line whose own text
// differs from its frames' is corrupt, and an error.
func pretrainRecord(path string, line []byte) (record[PretrainRow], error) {
	var p probe
	if err := jsonl.Unmarshal(line, &p); err != nil {
		return record[PretrainRow]{}, err
	}
	if p.Context == nil || p.Frames == nil {
		if k := p.kind(); k != "" {
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
