package envserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"cwm/internal/agent"
	"cwm/internal/env"
	"cwm/internal/episode"
	"cwm/internal/model"
	"cwm/internal/sandbox"
	"cwm/internal/sim"
	"cwm/internal/task"
	"cwm/internal/trajectory"
)

// toolAction is a step of a swe or shell episode: the model's reply as
// raw text (the cwm protocol), as an assistant message (either protocol:
// its content, or its tool calls), or as one tool call. Usage, when
// given, is the model call's, for the context budget; without it the
// conversation's bytes/4 stand in.
type toolAction struct {
	Text       *string         `json:"text"`
	Message    json.RawMessage `json:"message"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments"`
	ToolCallID string          `json:"tool_call_id"`
	Usage      *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
	Metadata map[string]any `json:"metadata"`
}

// toolSpec is a tool as OpenAI's chat API lists it.
type toolSpec struct {
	Type     string `json:"type"`
	Function struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	} `json:"function"`
}

// toolObservation is what a swe or shell reset or step observes.
type toolObservation struct {
	// Messages are the conversation's next messages, exactly as cwm
	// forage would send them: the prompt at reset, the tool results (or
	// the format error) after a step.
	Messages []model.Message `json:"messages"`
	// Tools are the function schemas of the openai protocol, at reset.
	Tools []toolSpec `json:"tools,omitempty"`
	// Output is what the (first) tool printed, unframed.
	Output      string `json:"output"`
	Tool        string `json:"tool,omitempty"`
	OK          bool   `json:"ok"`
	ExitCode    *int   `json:"exit_code"`
	FormatError bool   `json:"format_error"`
	Turn        int    `json:"turn"`
	// RemainingTurns is what the budget notice says.
	RemainingTurns int    `json:"remaining_turns"`
	ExitReason     string `json:"exit_reason,omitempty"`
	// ContextSwitch is CWM's Transition.context_switch; cwm's kinds never
	// ask for one.
	ContextSwitch bool           `json:"context_switch"`
	Metadata      map[string]any `json:"metadata"`
}

// toolEpisode is a swe or a shell episode: a toolbox in a sandbox, driven
// one model reply at a time through a tool protocol, recorded as cwm
// forage records its episodes.
type toolEpisode struct {
	s      *Server
	kind   string
	proto  agent.Protocol
	tb     *episode.Toolbox
	ep     *episode.Episode // swe: the task's episode (owns tb)
	sb     *sandbox.Sandbox // shell: tb's sandbox, owned
	task   *task.Task       // swe
	env    *env.Env
	limits agent.Limits
	tr     *trajectory.Trajectory

	started      time.Time
	formatErrors int
	bytes        int   // of the conversation, for the token estimate
	used         int64 // context tokens of the last step
	done         bool
	broken       error // the sandbox failed mid-step: the episode cannot go on
	reward       *float64
	final        map[string]any // the metadata of the episode's end
	calls        int            // tool call ids made up for one-call actions
	// sim is the sim backend of a swe episode on it, or recording its
	// contexts; simOpts its options.
	sim     *sim.Backend
	simOpts *sim.Options
}

// startShell opens a sandbox on the environment and a session in its
// repository.
func (s *Server) startShell(ctx context.Context, p *resetPlan) (episodeImpl, Result, error) {
	sb, err := s.opts.Sandboxes.Open(ctx, p.env)
	if err != nil {
		return nil, Result{}, err
	}
	tb, err := episode.NewToolbox(ctx, sb, p.env.RepoDir(), s.opts.Limits.CommandTimeout)
	if err != nil {
		sb.Close()
		return nil, Result{}, err
	}
	t := s.newToolEpisode(p, tb)
	t.sb = sb
	msgs := p.proto.Prompt(agent.Prompt{RepoRoot: p.env.RepoDir(), Limits: t.limits})[:1]
	if p.data.Instruction != "" {
		msgs = append(msgs, model.Message{Role: model.RoleUser, Content: p.data.Instruction})
	}
	return t, t.opening(msgs), nil
}

// startSWE copies the task's prepared sandbox (templates) and starts a
// session in its repository.
func (s *Server) startSWE(ctx context.Context, p *resetPlan) (episodeImpl, Result, error) {
	ep, err := s.tmpl.fork(ctx, p.env, p.task)
	if err != nil {
		return nil, Result{}, err
	}
	t := s.newToolEpisode(p, ep.Toolbox)
	t.ep, t.task = ep, p.task
	if o := s.simOptions(p); o != nil {
		t.simOpts = o
		t.sim = sim.New(ep, o)
		ep.Exec = t.sim
	}
	msgs := p.proto.Prompt(agent.Prompt{Issue: p.task.ProblemStatement, RepoRoot: ep.RepoRoot(), Limits: t.limits})
	return t, t.opening(msgs), nil
}

func (s *Server) newToolEpisode(p *resetPlan, tb *episode.Toolbox) *toolEpisode {
	taskID := "shell/" + p.env.ID
	if p.task != nil {
		taskID = p.task.InstanceID
	}
	tr := &trajectory.Trajectory{TaskID: taskID, Model: p.data.Model, Protocol: p.proto.Name(), EnvID: p.env.ID,
		StartedAt: time.Now().UTC(), Steps: []trajectory.Step{}, ModelCalls: []trajectory.ModelCall{}}
	tr.Sample = s.traj.sample(taskID, p.data.Sample)
	return &toolEpisode{s: s, kind: p.kind, proto: p.proto, tb: tb, env: p.env, limits: s.opts.Limits, tr: tr, started: time.Now()}
}

// opening records the prompt and makes the reset's observation.
func (t *toolEpisode) opening(msgs []model.Message) Result {
	t.tr.Messages = append(t.tr.Messages, msgs...)
	for _, m := range msgs {
		t.bytes += len(m.Content)
	}
	t.tr.SetupSeconds = time.Since(t.started).Seconds()
	obs := toolObservation{Messages: msgs, RemainingTurns: t.limits.MaxTurns, Metadata: t.meta()}
	for _, tool := range t.proto.Tools() {
		var spec toolSpec
		spec.Type = "function"
		spec.Function.Name, spec.Function.Description, spec.Function.Parameters = tool.Name, tool.Description, tool.Parameters
		obs.Tools = append(obs.Tools, spec)
	}
	return Result{Observation: obs}
}

func (t *toolEpisode) meta() map[string]any {
	m := map[string]any{"task_id": t.tr.TaskID, "env_id": t.env.ID, "protocol": t.proto.Name(), "sample": t.tr.Sample,
		"repo_root": t.env.RepoDir()}
	if t.ep != nil {
		m["base_commit"] = t.ep.Base()
	}
	return m
}

// reply reads an action as the model's reply.
func (t *toolEpisode) reply(raw json.RawMessage) (toolAction, model.Message, error) {
	var a toolAction
	if err := decodeObject(raw, &a, "data"); err != nil {
		return a, model.Message{}, err
	}
	n := 0
	for _, set := range []bool{a.Text != nil, len(a.Message) > 0, a.Tool != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return a, model.Message{}, invalid("value_error", "an action is exactly one of text, message, or tool with arguments", "data")
	}
	switch {
	case a.Text != nil:
		return a, model.Message{Role: model.RoleAssistant, Content: *a.Text}, nil
	case len(a.Message) > 0:
		var m model.Message
		if err := json.Unmarshal(a.Message, &m); err != nil {
			return a, m, invalid("model_type", "message: "+err.Error(), "data", "message")
		}
		m.Role = model.RoleAssistant
		return a, m, nil
	}
	args := string(a.Arguments)
	var str string
	if json.Unmarshal(a.Arguments, &str) == nil {
		args = str
	}
	if t.proto.Name() == "cwm" {
		if len(a.Arguments) > 0 && str == "" && args != `""` && args != "" {
			return a, model.Message{}, invalid("string_type", "the cwm protocol's tool input is a string", "data", "arguments")
		}
		return a, model.Message{Role: model.RoleAssistant, Content: "<tool: " + a.Tool + ">\n" + str + "\n</tool>"}, nil
	}
	id := a.ToolCallID
	if id == "" {
		t.calls++
		id = fmt.Sprintf("call_%d", t.calls)
	}
	if len(a.Arguments) == 0 {
		args = "{}"
	}
	return a, model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Type: "function",
		Function: model.FunctionCall{Name: a.Tool, Arguments: args}}}}, nil
}

// step runs one model reply as cwm forage's loop does: the limits in
// CWM's order (context, turns), then the reply's calls, or its format
// error; a successful submit ends the episode, graded.
func (t *toolEpisode) step(ctx context.Context, raw json.RawMessage) (Result, error) {
	if t.broken != nil {
		return Result{}, fmt.Errorf("the episode's sandbox failed: %w", t.broken)
	}
	if t.done {
		return Result{}, &sessionError{http.StatusConflict, fmt.Sprintf("the episode has ended (%s): reset, or start a new one", t.tr.ExitReason)}
	}
	a, reply, err := t.reply(raw)
	if err != nil {
		return Result{}, err
	}
	l := t.limits
	turn := t.tr.Turns + 1
	t.tr.Turns = turn
	t.tr.Messages = append(t.tr.Messages, reply)
	t.bytes += len(reply.Content)
	for _, c := range reply.ToolCalls {
		t.bytes += len(c.Function.Name) + len(c.Function.Arguments)
	}
	call := trajectory.ModelCall{Turn: turn}
	if a.Usage != nil {
		call.PromptTokens, call.CompletionTokens = a.Usage.PromptTokens, a.Usage.CompletionTokens
		t.used = a.Usage.PromptTokens + a.Usage.CompletionTokens
	} else {
		t.used = model.EstimateTokens(t.bytes)
		call.Estimated, t.tr.Tokens.Estimated = true, true
	}
	t.tr.ModelCalls = append(t.tr.ModelCalls, call)
	t.tr.Tokens.Prompt += call.PromptTokens
	t.tr.Tokens.Completion += call.CompletionTokens
	t.tr.Tokens.Context = t.used
	obs := toolObservation{Messages: []model.Message{}, Turn: turn, RemainingTurns: l.MaxTurns - turn, Metadata: map[string]any{}}

	switch {
	case l.WallTime > 0 && time.Since(t.started) > l.WallTime:
		return t.finish(ctx, trajectory.ExitTimeout, obs)
	case t.used > int64(l.ContextTokens):
		return t.finish(ctx, trajectory.ExitContext, obs)
	case turn >= l.MaxTurns:
		return t.finish(ctx, trajectory.ExitMaxTurns, obs)
	}
	calls, ferr := t.proto.Parse(reply)
	if ferr != nil {
		t.tr.Steps = append(t.tr.Steps, trajectory.Step{Turn: turn, Action: reply.Content, Observation: ferr.Error(), FormatError: true})
		m := t.proto.Reject(ferr)
		t.tr.Messages = append(t.tr.Messages, m)
		t.bytes += len(m.Content)
		obs.Messages, obs.Output, obs.FormatError = append(obs.Messages, m), ferr.Error(), true
		t.formatErrors++
		if l.Strict || t.formatErrors >= l.MaxFormatErrors {
			return t.finish(ctx, trajectory.ExitFormatErrors, obs)
		}
		return Result{Observation: obs}, nil
	}
	allInvalid, submitted := true, false
	for i, c := range calls {
		t0 := time.Now()
		o, err := t.proto.Run(ctx, t.tb, c)
		if err != nil {
			if ctx.Err() == nil {
				t.broken = err
			}
			return Result{}, fmt.Errorf("run tool %s: %w", c.Tool, err)
		}
		o.Text = agent.TruncateText(o.Text, l.MaxObservationTokens*4)
		st := trajectory.Step{Turn: turn, Tool: c.Tool, Action: c.Input, Observation: o.Text, OK: o.OK,
			FormatError: o.Invalid, Seconds: time.Since(t0).Seconds(), Sim: o.Sim}
		if c.Tool == "bash" && !o.Invalid {
			code := o.ExitCode
			st.ExitCode = &code
		}
		t.tr.Steps = append(t.tr.Steps, st)
		allInvalid = allInvalid && o.Invalid
		if c.Tool == "submit" && o.OK {
			p := o.Patch
			t.tr.SubmittedPatch, submitted = &p, true
		}
		m := t.proto.Result(c, o, agent.Budget{RemainingTurns: l.MaxTurns - turn, UsedTokens: t.used, ContextTokens: l.ContextTokens})
		t.tr.Messages = append(t.tr.Messages, m)
		t.bytes += len(m.Content)
		obs.Messages = append(obs.Messages, m)
		if i == 0 {
			obs.Tool, obs.Output, obs.OK, obs.ExitCode, obs.FormatError = c.Tool, o.Text, o.OK, st.ExitCode, o.Invalid
		}
	}
	if allInvalid {
		t.formatErrors++
		if l.Strict || t.formatErrors >= l.MaxFormatErrors {
			return t.finish(ctx, trajectory.ExitFormatErrors, obs)
		}
	} else {
		t.formatErrors = 0
	}
	if submitted {
		return t.finish(ctx, trajectory.ExitSubmitted, obs)
	}
	return Result{Observation: obs}, nil
}

// diffTimeout bounds taking the final diff.
const diffTimeout = 2 * time.Minute

// finish ends the episode: its final diff, its grade (swe: the submitted
// patch, or the diff when nothing was submitted, as cwm reward grades
// it), its trajectory line.
func (t *toolEpisode) finish(ctx context.Context, why trajectory.ExitReason, obs toolObservation) (Result, error) {
	t.done = true
	t.tr.ExitReason = why
	obs.ExitReason = string(why)
	meta := t.meta()
	meta["exit_reason"] = string(why)
	meta["turns"] = t.tr.Turns
	meta["submitted"] = t.tr.SubmittedPatch != nil
	if t.ep != nil {
		dctx, cancel := context.WithTimeout(ctx, diffTimeout)
		diff, err := t.ep.Diff(dctx)
		cancel()
		if err != nil {
			meta["diff_error"] = err.Error()
		}
		t.tr.Patch = diff
		patch := diff
		if t.tr.SubmittedPatch != nil {
			patch = *t.tr.SubmittedPatch
		}
		if t.simOpts != nil {
			t.tr.Sim = sim.Summarize(t.simOpts.Summary(), t.tr.Steps)
			t.tr.Sim.Statement = t.task.ProblemStatement
			meta["backend"] = t.tr.Sim.Backend
		}
		if t.simOpts != nil && t.simOpts.Reward != nil && !t.simOpts.RecordOnly {
			t.predictReward(ctx, patch, meta)
		} else {
			t.grade(ctx, patch, meta)
		}
	} else if t.tr.SubmittedPatch != nil {
		meta["patch"] = *t.tr.SubmittedPatch
	}
	t.tr.Seconds = time.Since(t.started).Seconds()
	if err := t.s.traj.write(t.tr); err != nil {
		meta["trajectory_error"] = err.Error()
		t.s.log.Error("write trajectory", "task", t.tr.TaskID, "err", err)
	}
	maps := obs.Metadata
	for k, v := range meta {
		maps[k] = v
	}
	t.final = maps
	t.s.metrics.finished(t.kind, string(why))
	return Result{Observation: obs, Reward: t.reward, Done: true}, nil
}

// state implements episodeImpl.
func (t *toolEpisode) state() map[string]any {
	st := t.meta()
	st["turn"] = t.tr.Turns
	st["remaining_turns"] = t.limits.MaxTurns - t.tr.Turns
	st["format_errors"] = t.formatErrors
	st["used_tokens"] = t.used
	st["submitted"] = t.tr.SubmittedPatch != nil
	if t.done {
		st["exit_reason"] = string(t.tr.ExitReason)
		st["reward"] = t.reward
	}
	return st
}

func (t *toolEpisode) finished() bool { return t.done }

// clone implements episodeImpl: the sandbox's files and the session's
// directory and exports are copied (episode.Clone), and so is the record
// so far: the conversation, the steps, the turn count.
func (t *toolEpisode) clone(ctx context.Context) (episodeImpl, error) {
	if t.broken != nil {
		return nil, fmt.Errorf("the episode's sandbox failed: %w", t.broken)
	}
	c := t.copyState()
	c.tr.Sample = t.s.traj.sample(c.tr.TaskID, nil)
	t.s.warm.topUp(t.env, 1)
	if t.ep != nil {
		ep, err := t.ep.Clone(ctx)
		if err != nil {
			return nil, err
		}
		c.ep, c.tb = ep, ep.Toolbox
		if t.sim != nil {
			c.sim = t.sim.Clone(ep)
			ep.Exec = c.sim
		}
		return &c, nil
	}
	tb, err := t.tb.Branch(ctx)
	if err != nil {
		return nil, err
	}
	c.tb, c.sb = tb, tb.Sandbox()
	return &c, nil
}

// copyState is a copy of the episode whose record so far (the
// conversation, the steps, the model calls) is its own.
func (t *toolEpisode) copyState() toolEpisode {
	c := *t
	tr := *t.tr
	tr.Messages = slices.Clone(t.tr.Messages)
	tr.Steps = slices.Clone(t.tr.Steps)
	tr.ModelCalls = slices.Clone(t.tr.ModelCalls)
	c.tr = &tr
	return c
}

func (t *toolEpisode) close() {
	if t.ep != nil {
		t.ep.Close()
		return
	}
	t.tb.Close()
	t.sb.Close()
}
