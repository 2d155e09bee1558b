// Package report makes one static HTML file from cwm's outputs: evals
// (cwm eval cruxeval, halt, fidelity), traces, tasks, trajectories and
// their rewards, and cwm select's picks with their curves over k. The
// page needs no network: plots are inline SVG, the data of its trace and
// trajectory viewers is embedded as JSON, and its script is inline.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"cwm/internal/errkind"
	"cwm/internal/eval"
	"cwm/internal/jsonl"
	"cwm/internal/sim"
	"cwm/internal/trace"
	"cwm/internal/traceline"
	"cwm/internal/trajectory"
)

// Kind is what a file holds, told from its first line.
type Kind string

const (
	KindCruxEval     Kind = "cruxeval"
	KindHalt         Kind = "halt"
	KindFidelity     Kind = "fidelity"
	KindTraces       Kind = "traces"
	KindTrajectories Kind = "trajectories"
	KindTasks        Kind = "tasks"
	KindObserve      Kind = "observe"
	KindSelect       Kind = "select"
)

// Detect tells a file's kind from the keys of its first line.
func Detect(path string) (Kind, error) {
	var kind Kind
	err := jsonl.ScanInput(path, func(_ int, line []byte) error {
		if kind != "" {
			return nil
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			return errkind.Wrap(errkind.Input, err)
		}
		has := func(keys ...string) bool {
			for _, k := range keys {
				if _, ok := m[k]; !ok {
					return false
				}
			}
			return true
		}
		switch {
		case has("verdict", "mode", "sample"):
			kind = KindCruxEval
		case has("label", "answer", "sample"):
			kind = KindHalt
		case has("truth", "normalized", "similarity"):
			kind = KindObserve
		case has("task", "positional", "aligned"):
			kind = KindFidelity
		case has("task_id", "messages", "exit_reason"):
			kind = KindTrajectories
		case has("instance_id", "model_patch", "winner", "candidates"):
			kind = KindSelect
		case has("instance_id", "FAIL_TO_PASS"):
			kind = KindTasks
		case has("id", "context", "frames", "status"):
			kind = KindTraces
		default:
			return errkind.New(errkind.Input, "not an output of cwm eval, trace, tasks, forage, reward or select")
		}
		return nil
	})
	if err == nil && kind == "" {
		err = errkind.New(errkind.Input, path+": empty")
	}
	return kind, err
}

// Report is what the page shows.
type Report struct {
	Title  string
	Inputs []Input
	Crux   []CruxSection
	Halt   []HaltSection
	Fid    []FidSection
	Obs    []ObsSection
	Traj   []TrajSection
	Tasks  []TaskSection
	Select []SelectSection
	Search []*SearchSection
	// Viewer is the embedded data of the viewers.
	Viewer ViewerData
}

// Input is one file read.
type Input struct {
	Path  string
	Kind  Kind
	Lines int
}

// CruxSection is one cruxeval output file.
type CruxSection struct {
	File    string
	Summary *eval.Summary
	Rows    []CruxRow
}

// CruxRow is one problem of a cruxeval run.
type CruxRow struct {
	ID, Answer, Output, Verdict string
	Correct, Samples            int
}

// HaltSection is one halt output file.
type HaltSection struct {
	File    string
	Summary *eval.HaltSummary
}

// FidSection is one fidelity output file.
type FidSection struct {
	File    string
	Summary *eval.FidelitySummary
}

// ObsSection is one observe output file.
type ObsSection struct {
	File    string
	Summary *eval.ObserveSummary
	// Tools are the tools in name order.
	Tools []string
}

// TrajSection is one trajectories (or rewards) file.
type TrajSection struct {
	File    string
	N       int
	Rewards []float64
	Turns   []float64
	Tasks   []TrajTask
	// Resolved counts trajectories whose patch passed the hidden tests
	// (of those graded).
	Resolved, Graded int
	// Sim is cwm eval sim's table of the file's sim records, when it has
	// any.
	Sim string
}

// TrajTask is a task's row in the trajectories table.
type TrajTask struct {
	ID                string
	Samples, Resolved int
	MeanReward, Turns float64
	Rewarded          int
}

// TaskSection is one tasks file.
type TaskSection struct {
	File string
	Rows []TaskRow
}

// TaskRow is one task.
type TaskRow struct {
	ID, Repo, Kind string
	FailToPass     int
	PassToPass     int
}

// ViewerData is the viewers' embedded data.
type ViewerData struct {
	Traces       []ViewTrace `json:"traces"`
	Trajectories []ViewTraj  `json:"trajectories"`
}

// ViewTrace is a trace as the viewer steps through it: the context's
// lines and the frames with their locals resolved.
type ViewTrace struct {
	ID      string      `json:"id"`
	Context []string    `json:"context"`
	Frames  []ViewFrame `json:"frames"`
	// Cut is set when the frames were cut to MaxViewFrames.
	Cut bool `json:"cut,omitempty"`
}

// ViewFrame is one frame of ViewTrace.
type ViewFrame struct {
	Event  string      `json:"event"`
	Line   int         `json:"line"`
	Source string      `json:"source"`
	Locals [][2]string `json:"locals"`
	Arg    string      `json:"arg,omitempty"`
	Depth  int         `json:"depth"`
}

// ViewTraj is a trajectory as the viewer steps through it.
type ViewTraj struct {
	ID       string      `json:"id"`
	Reward   *float64    `json:"reward"`
	Messages [][2]string `json:"messages"`
}

// Caps of the embedded viewer data, so that a report of a large run stays
// small enough to open.
const (
	MaxViewTraces   = 50
	MaxViewFrames   = 2000
	MaxViewTrajs    = 50
	MaxMessageChars = 4000
	MaxTableRows    = 1000
)

// Build reads the files and assembles the report.
func Build(title string, paths []string) (*Report, error) {
	r := &Report{Title: title}
	for _, p := range paths {
		if IsSearchDir(p) {
			sec, err := ReadSearch(p)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			r.Search = append(r.Search, sec)
			r.Inputs = append(r.Inputs, Input{Path: p, Kind: KindSearch, Lines: len(sec.Tasks)})
			continue
		}
		kind, err := Detect(p)
		if err != nil {
			return nil, err
		}
		in := Input{Path: p, Kind: kind}
		name := filepath.Base(p)
		switch kind {
		case KindCruxEval:
			err = r.addCrux(name, p, &in)
		case KindHalt:
			var s *eval.HaltSummary
			if s, err = eval.SummarizeHalt(p, nil); err == nil {
				in.Lines = s.Samples
				r.Halt = append(r.Halt, HaltSection{File: name, Summary: s})
			}
		case KindFidelity:
			var s *eval.FidelitySummary
			if s, err = eval.SummarizeFidelity(p, nil); err == nil {
				in.Lines = s.Traces + s.Steps
				r.Fid = append(r.Fid, FidSection{File: name, Summary: s})
			}
		case KindObserve:
			var s *eval.ObserveSummary
			if s, err = eval.SummarizeObserve(p, nil); err == nil {
				in.Lines = s.All.N
				sec := ObsSection{File: name, Summary: s}
				for t := range s.Tools {
					sec.Tools = append(sec.Tools, t)
				}
				sort.Strings(sec.Tools)
				r.Obs = append(r.Obs, sec)
			}
		case KindTraces:
			err = r.addTraces(p, &in)
		case KindTrajectories:
			err = r.addTrajectories(name, p, &in)
		case KindTasks:
			err = r.addTasks(name, p, &in)
		case KindSelect:
			err = r.addSelect(name, p, &in)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		r.Inputs = append(r.Inputs, in)
	}
	return r, nil
}

func (r *Report) addCrux(name, path string, in *Input) error {
	byMode := map[eval.Mode]bool{}
	rows := map[string]*CruxRow{}
	var order []string
	err := jsonl.Decode(path, func(_ int, l eval.Line) error {
		byMode[l.Mode] = true
		in.Lines++
		row := rows[string(l.Mode)+"\x00"+l.ID]
		if row == nil {
			row = &CruxRow{ID: l.ID, Answer: l.Answer, Output: l.Output, Verdict: string(l.Verdict)}
			rows[string(l.Mode)+"\x00"+l.ID] = row
			order = append(order, string(l.Mode)+"\x00"+l.ID)
		}
		row.Samples++
		if l.Correct {
			row.Correct++
		}
		return nil
	})
	if err != nil {
		return err
	}
	modes := make([]string, 0, len(byMode))
	for m := range byMode {
		modes = append(modes, string(m))
	}
	sort.Strings(modes)
	for _, m := range modes {
		s, err := eval.Summarize(path, eval.Mode(m), nil)
		if err != nil {
			return err
		}
		sec := CruxSection{File: name, Summary: s}
		for _, k := range order {
			if strings.HasPrefix(k, m+"\x00") && len(sec.Rows) < MaxTableRows {
				sec.Rows = append(sec.Rows, *rows[k])
			}
		}
		r.Crux = append(r.Crux, sec)
	}
	return nil
}

func (r *Report) addTraces(path string, in *Input) error {
	return jsonl.Decode(path, func(_ int, t traceline.Line) error {
		in.Lines++
		if len(r.Viewer.Traces) >= MaxViewTraces || len(t.Frames) == 0 {
			return nil
		}
		vt := ViewTrace{ID: t.ID, Context: strings.Split(strings.TrimSuffix(t.Context, "\n"), "\n")}
		frames := t.Frames
		if len(frames) > MaxViewFrames {
			frames, vt.Cut = frames[:MaxViewFrames], true
		}
		for _, f := range trace.Expand(frames) {
			vf := ViewFrame{Event: f.Event.String(), Line: f.Lineno, Source: f.Source, Arg: f.Arg, Depth: f.Depth}
			vf.Locals = [][2]string{}
			for _, l := range f.Locals {
				vf.Locals = append(vf.Locals, [2]string{l.Name, l.Value})
			}
			vt.Frames = append(vt.Frames, vf)
		}
		r.Viewer.Traces = append(r.Viewer.Traces, vt)
		return nil
	})
}

func (r *Report) addTrajectories(name, path string, in *Input) error {
	type traj struct {
		TaskID   string `json:"task_id"`
		Sample   int    `json:"sample"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Turns    int                    `json:"turns"`
		Reward   *float64               `json:"reward"`
		Resolved *bool                  `json:"resolved"`
		EnvID    string                 `json:"env_id"`
		Steps    []trajectory.Step      `json:"steps"`
		Sim      *trajectory.SimSummary `json:"sim"`
	}
	sec := TrajSection{File: name}
	var simTrs []*trajectory.Trajectory
	tasks := map[string]*TrajTask{}
	var order []string
	err := jsonl.Decode(path, func(_ int, t traj) error {
		in.Lines++
		sec.N++
		sec.Turns = append(sec.Turns, float64(t.Turns))
		tt := tasks[t.TaskID]
		if tt == nil {
			tt = &TrajTask{ID: t.TaskID}
			tasks[t.TaskID] = tt
			order = append(order, t.TaskID)
		}
		tt.Samples++
		tt.Turns += float64(t.Turns)
		if s := sim.Slim(&trajectory.Trajectory{TaskID: t.TaskID, Sample: t.Sample, EnvID: t.EnvID, Reward: t.Reward,
			Steps: t.Steps, Sim: t.Sim}); len(s.Steps) > 0 {
			simTrs = append(simTrs, s)
		}
		if t.Reward != nil {
			sec.Rewards = append(sec.Rewards, *t.Reward)
			tt.MeanReward += *t.Reward
			tt.Rewarded++
		}
		if t.Resolved != nil {
			sec.Graded++
			if *t.Resolved {
				sec.Resolved++
				tt.Resolved++
			}
		}
		if len(r.Viewer.Trajectories) < MaxViewTrajs {
			vt := ViewTraj{ID: fmt.Sprintf("%s #%d", t.TaskID, t.Sample), Reward: t.Reward, Messages: [][2]string{}}
			for _, m := range t.Messages {
				c := m.Content
				if len(c) > MaxMessageChars {
					c = c[:MaxMessageChars] + fmt.Sprintf("\n[... %d more characters]", len(m.Content)-MaxMessageChars)
				}
				vt.Messages = append(vt.Messages, [2]string{m.Role, c})
			}
			r.Viewer.Trajectories = append(r.Viewer.Trajectories, vt)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range order {
		tt := tasks[id]
		tt.Turns /= float64(tt.Samples)
		if tt.Rewarded > 0 {
			tt.MeanReward /= float64(tt.Rewarded)
		}
		if len(sec.Tasks) < MaxTableRows {
			sec.Tasks = append(sec.Tasks, *tt)
		}
	}
	if len(simTrs) > 0 {
		var b strings.Builder
		sim.Measure(simTrs, -1).Write(&b)
		sec.Sim = b.String()
	}
	r.Traj = append(r.Traj, sec)
	return nil
}

func (r *Report) addTasks(name, path string, in *Input) error {
	type task struct {
		InstanceID string   `json:"instance_id"`
		Repo       string   `json:"repo"`
		Kind       string   `json:"kind"`
		FailToPass []string `json:"FAIL_TO_PASS"`
		PassToPass []string `json:"PASS_TO_PASS"`
	}
	sec := TaskSection{File: name}
	err := jsonl.Decode(path, func(_ int, t task) error {
		in.Lines++
		if len(sec.Rows) < MaxTableRows {
			sec.Rows = append(sec.Rows, TaskRow{ID: t.InstanceID, Repo: t.Repo, Kind: t.Kind, FailToPass: len(t.FailToPass), PassToPass: len(t.PassToPass)})
		}
		return nil
	})
	r.Tasks = append(r.Tasks, sec)
	return err
}

// WriteFile renders the report to path.
func WriteFile(path string, r *Report) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".report-*.html")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := Render(f, r); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
