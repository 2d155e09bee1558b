package envserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"cwm/internal/agent"
	"cwm/internal/env"
	"cwm/internal/errkind"
	"cwm/internal/task"
	"cwm/internal/trace"
)

// resetData is a reset's parameters: OpenEnv's ResetRequest (seed,
// episode_id) and cwm's, by kind. Fields of another kind are refused.
type resetData struct {
	Kind      string `json:"kind"`
	EpisodeID string `json:"episode_id"`
	// Seed is OpenEnv's; episodes are deterministic given their actions,
	// so it is recorded and otherwise unused.
	Seed *int64 `json:"seed"`

	// swe and trace: a task of the Task API, by split and index.
	Split string `json:"split"`
	Index *int   `json:"index"`
	// swe: a task of the server's by id, or a task record.
	TaskID     string     `json:"task_id"`
	InstanceID string     `json:"instance_id"`
	Task       *task.Task `json:"task"`
	// swe and shell: the tool protocol, and who the trajectory is of.
	Protocol string `json:"protocol"`
	Model    string `json:"model"`
	Sample   *int   `json:"sample"`
	// swe: real or sim (docs/sim.md); the server's --backend by default.
	Backend string `json:"backend"`
	// shell: the environment, and an optional first user message.
	Env         string `json:"env"`
	Instruction string `json:"instruction"`

	// trace: a trace of the server's by id, a trace (context and frames,
	// or CWM text), or code and a call to trace now; the reward mode.
	TraceID string          `json:"trace_id"`
	Trace   json.RawMessage `json:"trace"`
	Code    string          `json:"code"`
	Call    string          `json:"call"`
	Reward  string          `json:"reward"`
}

// kindFields are the fields of each kind beyond the common ones.
var kindFields = map[string][]string{
	KindSWE:   {"task_id", "instance_id", "task", "split", "index", "protocol", "model", "sample", "backend"},
	KindShell: {"env", "instruction", "protocol", "model", "sample"},
	KindTrace: {"trace_id", "trace", "code", "call", "split", "index", "reward"},
}

// resetPlan is a validated reset: what to start, resolved.
type resetPlan struct {
	kind      string
	episodeID string
	data      resetData
	task      *task.Task
	env       *env.Env
	proto     agent.Protocol
	trace     *TraceRecord // trace given by id or inline
}

// planReset validates a reset's data and resolves what it names, so that
// a reset that cannot start leaves the session's episode alone.
func (s *Server) planReset(raw json.RawMessage) (*resetPlan, error) {
	var d resetData
	if err := decodeObject(raw, &d, "data"); err != nil {
		return nil, err
	}
	p := &resetPlan{kind: d.Kind, episodeID: d.EpisodeID, data: d}
	if p.kind == "" {
		p.kind = s.opts.Kind
	}
	allowed, ok := kindFields[p.kind]
	if !ok {
		return nil, invalid("enum", fmt.Sprintf("kind %q: want swe, trace or shell", p.kind), "data", "kind")
	}
	if err := onlyKindFields(raw, p.kind, allowed); err != nil {
		return nil, err
	}
	if err := checkEpisodeID(d.EpisodeID, "data", "episode_id"); err != nil {
		return nil, err
	}
	if d.Seed != nil && *d.Seed < 0 {
		return nil, invalid("greater_than_equal", "Input should be greater than or equal to 0", "data", "seed")
	}
	if p.kind == KindSWE || p.kind == KindShell {
		name := d.Protocol
		if name == "" {
			name = s.opts.Protocol
		}
		proto, err := agent.NewProtocol(name, s.opts.ToolRole)
		if err != nil {
			return nil, invalid("enum", err.Error(), "data", "protocol")
		}
		p.proto = proto
	}
	if err := s.resolveSplit(p); err != nil {
		return nil, err
	}
	var err error
	switch p.kind {
	case KindSWE:
		err = s.planSWE(p)
	case KindShell:
		err = s.planShell(p)
	case KindTrace:
		err = s.planTrace(p)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// onlyKindFields refuses fields that belong to another kind.
func onlyKindFields(raw json.RawMessage, kind string, allowed []string) error {
	var fields map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &fields) != nil {
		return nil
	}
	var names []string
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		switch k {
		case "kind", "episode_id", "seed":
			continue
		}
		if !contains(allowed, k) {
			return invalid("extra_forbidden", fmt.Sprintf("not a field of a %s reset (its fields: %s)", kind, strings.Join(allowed, ", ")), "data", k)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// resolveSplit turns a reset's split and index (a task of the Task API)
// into the task_id or trace_id they name.
func (s *Server) resolveSplit(p *resetPlan) error {
	d := &p.data
	if d.Split == "" && d.Index == nil {
		return nil
	}
	if d.Split == "" || d.Index == nil {
		return invalid("missing", "split and index go together", "data", map[bool]string{true: "split", false: "index"}[d.Split == ""])
	}
	if d.TaskID != "" || d.InstanceID != "" || d.Task != nil || d.TraceID != "" || len(d.Trace) > 0 || d.Code != "" {
		return invalid("value_error", "a reset names its task by split and index, or otherwise, not both", "data", "split")
	}
	id, err := s.splitID(d.Split, *d.Index)
	if err != nil {
		loc := "split"
		if te, ok := err.(*taskAPIError); ok && strings.HasPrefix(te.msg, "Invalid task index") {
			loc = "index"
		}
		return invalid("value_error", err.Error(), "data", loc)
	}
	if p.kind == KindSWE {
		d.TaskID = id
	} else {
		d.TraceID = id
	}
	return nil
}

func (s *Server) planSWE(p *resetPlan) error {
	d := &p.data
	id := d.TaskID
	if id == "" {
		id = d.InstanceID
	}
	switch {
	case d.Task != nil && id != "":
		return invalid("value_error", "give a task_id or a task, not both", "data", "task")
	case d.Task != nil:
		if d.Task.InstanceID == "" || d.Task.EnvID == "" {
			return invalid("missing", "a task needs instance_id and env_id", "data", "task")
		}
		if len(d.Task.FailToPass)+len(d.Task.PassToPass) == 0 {
			return invalid("missing", "a task needs FAIL_TO_PASS or PASS_TO_PASS tests to be graded", "data", "task")
		}
		p.task = d.Task
	case id == "":
		return invalid("missing", fmt.Sprintf("a swe reset names a task_id (%d tasks served) or gives a task", len(s.tasks)), "data", "task_id")
	default:
		t, ok := s.tasks[id]
		if !ok {
			return errkind.Errorf(errkind.NotFound, "no task %q among the %d tasks served", id, len(s.tasks))
		}
		p.task = t
	}
	switch d.Backend {
	case "":
		d.Backend = s.opts.Backend
	case "real":
	case "sim":
		if s.opts.Sim == nil || s.opts.Sim.World == nil {
			return invalid("value_error", "backend sim: the server has no world model (cwm serve --sim-model, --sim-base-url)", "data", "backend")
		}
	default:
		return invalid("enum", fmt.Sprintf("backend %q: want real or sim", d.Backend), "data", "backend")
	}
	e, err := s.opts.Store.Resolve(p.task.EnvID)
	if err != nil {
		return fmt.Errorf("task %s: %w", p.task.InstanceID, err)
	}
	p.env = e
	return nil
}

func (s *Server) planShell(p *resetPlan) error {
	ref := p.data.Env
	if ref == "" {
		if len(s.opts.Envs) != 1 {
			return invalid("missing", "a shell reset names its env", "data", "env")
		}
		ref = s.opts.Envs[0]
	}
	e, err := s.opts.Store.Resolve(ref)
	if err != nil {
		return err
	}
	if s.envs != nil && !s.envs[e.ID] {
		return errkind.Errorf(errkind.NotFound, "environment %s is not served to shell episodes", ref)
	}
	if !e.Usable {
		return errkind.Errorf(errkind.Input, "environment %s is not usable: %s", ref, e.Reason)
	}
	p.env = e
	return nil
}

func (s *Server) planTrace(p *resetPlan) error {
	d := &p.data
	n := 0
	for _, set := range []bool{d.TraceID != "", len(d.Trace) > 0 && string(d.Trace) != "null", d.Code != "" || d.Call != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return invalid("value_error", "a trace reset gives exactly one of trace_id, trace, or code and call", "data")
	}
	switch d.Reward {
	case "", "partial", "exact":
	default:
		return invalid("enum", fmt.Sprintf("reward %q: want partial or exact", d.Reward), "data", "reward")
	}
	switch {
	case d.TraceID != "":
		r, ok := s.traces[d.TraceID]
		if !ok {
			return errkind.Errorf(errkind.NotFound, "no trace %q among the %d traces served", d.TraceID, len(s.traces))
		}
		p.trace = r
	case len(d.Trace) > 0:
		r, err := inlineTrace(d.Trace)
		if err != nil {
			return err
		}
		p.trace = r
	default:
		if d.Code == "" || strings.TrimSpace(d.Call) == "" {
			return invalid("missing", "give both code and call", "data", "call")
		}
	}
	return nil
}

// inlineTrace reads a trace a reset brings: {"context", "frames"} as
// trace.Trace has them, or {"text"}, CWM's text.
func inlineTrace(raw json.RawMessage) (*TraceRecord, error) {
	var v struct {
		ID      string        `json:"id"`
		Context string        `json:"context"`
		Frames  []trace.Frame `json:"frames"`
		Text    string        `json:"text"`
	}
	if err := decodeObject(raw, &v, "data", "trace"); err != nil {
		return nil, err
	}
	t := trace.Trace{Context: v.Context, Frames: v.Frames}
	if v.Text != "" {
		if len(v.Frames) > 0 {
			return nil, invalid("value_error", "give frames or text, not both", "data", "trace")
		}
		var err error
		if t, err = trace.Parse(v.Text); err != nil {
			return nil, invalid("value_error", "text: "+err.Error(), "data", "trace", "text")
		}
	}
	if err := trace.Validate(t); err != nil {
		return nil, invalid("value_error", err.Error(), "data", "trace")
	}
	id := v.ID
	if id == "" {
		id = "inline"
	}
	return &TraceRecord{ID: id, Status: "ok", Context: t.Context, Frames: t.Frames}, nil
}

// startEpisode starts what a plan says and returns its first observation.
func (s *Server) startEpisode(ctx context.Context, p *resetPlan) (episodeImpl, Result, error) {
	var ep episodeImpl
	var res Result
	var err error
	switch p.kind {
	case KindSWE:
		ep, res, err = s.startSWE(ctx, p)
	case KindShell:
		ep, res, err = s.startShell(ctx, p)
	default:
		ep, res, err = s.startTrace(ctx, p)
	}
	if err != nil {
		var ve *validationError
		var ce *capacityError
		var se *sessionError
		if !errors.As(err, &ve) && !errors.As(err, &ce) && !errors.As(err, &se) && ctx.Err() == nil {
			err = &factoryError{err}
		}
		return nil, Result{}, err
	}
	if p.env != nil {
		s.warm.topUp(p.env, 1)
	}
	s.metrics.reset(p.kind)
	return ep, res, nil
}
