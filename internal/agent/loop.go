package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"cwm/internal/env"
	"cwm/internal/episode"
	"cwm/internal/model"
	"cwm/internal/sim"
	"cwm/internal/task"
	"cwm/internal/trajectory"
)

// Limits bound an episode. Zero fields take the values of DefaultLimits.
type Limits struct {
	// MaxTurns is the number of model replies (CWM: 128). As in CWM, the
	// reply that reaches it ends the episode without being run.
	MaxTurns int
	// ContextTokens is the context window (CWM: 131,072), checked against
	// the prompt plus completion tokens of the last call as the server
	// reports them (bytes/4 when it does not).
	ContextTokens int
	// CommandTimeout bounds one bash command (CWM: 120 s); it also names
	// the session timeout in the system prompt, in whole seconds.
	CommandTimeout time.Duration
	// WallTime bounds the whole episode (CWM: 2,400 s per sandbox).
	WallTime time.Duration
	// MaxCost ends the episode when its cost in USD reaches it (0: none).
	MaxCost float64
	// MaxFormatErrors ends the episode after this many consecutive replies
	// without a runnable tool call (default 8).
	MaxFormatErrors int
	// Strict is CWM's strict_format: the first format error ends the
	// episode, and a final response must contain "##" (a markdown summary).
	Strict bool
	// MaxObservationTokens caps one tool result (CWM's max_user_turn_len,
	// 32,768 tokens, as bytes/4); longer output is cut, keeping its start.
	MaxObservationTokens int
}

// DefaultLimits are CWM's limits.
var DefaultLimits = Limits{
	MaxTurns:             128,
	ContextTokens:        131072,
	CommandTimeout:       episode.DefaultCommandTimeout,
	WallTime:             2400 * time.Second,
	MaxFormatErrors:      8,
	MaxObservationTokens: 32768,
}

// WithDefaults fills zero fields from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	if l.MaxTurns <= 0 {
		l.MaxTurns = d.MaxTurns
	}
	if l.ContextTokens <= 0 {
		l.ContextTokens = d.ContextTokens
	}
	if l.CommandTimeout <= 0 {
		l.CommandTimeout = d.CommandTimeout
	}
	if l.WallTime <= 0 {
		l.WallTime = d.WallTime
	}
	if l.MaxFormatErrors <= 0 {
		l.MaxFormatErrors = d.MaxFormatErrors
	}
	if l.MaxObservationTokens <= 0 {
		l.MaxObservationTokens = d.MaxObservationTokens
	}
	return l
}

// Runner runs episodes. It is safe for concurrent use: each episode has
// its own sandbox.
type Runner struct {
	// Sandboxes start the episodes' sandboxes.
	Sandboxes *env.Sandboxes
	Client    *model.Client
	Protocol  Protocol
	Limits    Limits
	// History is how the bug is folded into git (default
	// episode.HistorySquash).
	History episode.History
	Log     *slog.Logger
	// Instruction replaces the opening user message's template (Prompt's
	// Instruction); SubmitFile lets submit take any file, not only a
	// patch (a test-generation episode submits its test).
	Instruction string
	SubmitFile  bool
	// Sim, when set, runs the episodes on the sim backend (or, with its
	// RecordOnly, records the contexts of the real backend's commands);
	// see docs/sim.md.
	Sim *sim.Options
}

// Attempt is one episode to run: a sample of a task.
type Attempt struct {
	Task *task.Task
	// Env is the task's environment.
	Env    *env.Env
	Sample int
	// Seed, when set, is the sampling seed of this attempt's requests.
	Seed *int64
}

var errWallTime = errors.New("episode wall time exceeded")

// diffTimeout bounds taking the final diff once the episode has ended.
const diffTimeout = 10 * time.Minute

// Run runs one episode to its end and returns its trajectory. Whatever the
// model does, including failing, is a trajectory; the error is for the
// harness: the sandbox could not start or died, the bug patch does not
// apply, or ctx was cancelled (then nothing should be recorded, so a
// resumed run does the episode again).
func (r *Runner) Run(ctx context.Context, a Attempt) (*trajectory.Trajectory, error) {
	l := r.Limits.WithDefaults()
	start := time.Now()
	tr := &trajectory.Trajectory{TaskID: a.Task.InstanceID, Sample: a.Sample, Model: r.Client.Model(),
		Protocol: r.Protocol.Name(), EnvID: a.Task.EnvID, StartedAt: start.UTC(),
		Steps: []trajectory.Step{}, ModelCalls: []trajectory.ModelCall{}}
	ectx, cancel := context.WithTimeoutCause(ctx, l.WallTime, errWallTime)
	defer cancel()

	sb, err := r.Sandboxes.Open(ectx, a.Env)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", tr.TaskID, err)
	}
	ep, err := episode.Start(ectx, sb, a.Task, episode.Options{History: r.History, CommandTimeout: l.CommandTimeout, RepoRoot: a.Env.RepoDir()})
	if err != nil {
		sb.Close()
		return nil, err
	}
	defer ep.Close()
	ep.SubmitFile = r.SubmitFile
	if r.Sim != nil {
		o := *r.Sim
		if o.Classifier.TestCommand == "" && a.Env != nil {
			o.Classifier.TestCommand = a.Env.Test.Command
		}
		ep.Exec = sim.New(ep, &o)
	}
	tr.SetupSeconds = time.Since(start).Seconds()

	reason, err := r.converse(ectx, ep, tr, l, a)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		if context.Cause(ectx) != errWallTime {
			return nil, fmt.Errorf("task %s sample %d: %w", tr.TaskID, tr.Sample, err)
		}
		reason = trajectory.ExitTimeout
	}
	tr.ExitReason = reason
	// The episode's own deadline may have passed; the diff still belongs
	// in its record.
	dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), diffTimeout)
	defer dcancel()
	if tr.Patch, err = ep.Diff(dctx); err != nil {
		return nil, fmt.Errorf("task %s sample %d: %w", tr.TaskID, tr.Sample, err)
	}
	if r.Sim != nil {
		tr.Sim = sim.Summarize(r.Sim.Summary(), tr.Steps)
		tr.Sim.Statement = a.Task.ProblemStatement
		if r.Sim.Reward != nil && !r.Sim.RecordOnly && tr.ExitReason != trajectory.ExitModelError {
			r.predictReward(dctx, a, tr)
		}
	}
	tr.Seconds = time.Since(start).Seconds()
	if r.Log != nil {
		r.Log.Debug("episode done", "task", tr.TaskID, "sample", tr.Sample, "exit", tr.ExitReason,
			"turns", tr.Turns, "seconds", tr.Seconds, "setup_seconds", tr.SetupSeconds)
	}
	return tr, nil
}

// predictReward asks the reward model for the episode's reward
// (--sim-reward): the submitted patch, or the diff when nothing was
// submitted, as the real grading takes them. A reward model that fails is
// recorded, not an error of the run.
func (r *Runner) predictReward(ctx context.Context, a Attempt, tr *trajectory.Trajectory) {
	patch := tr.Patch
	if tr.SubmittedPatch != nil {
		patch = *tr.SubmittedPatch
	}
	rep, err := r.Sim.Reward.Predict(ctx, a.Task.ProblemStatement, patch)
	if err != nil {
		tr.Sim.RewardError = err.Error()
		return
	}
	tr.Sim.PredictedReward = &rep.Reward
}

// converse is the episode loop: ask the model, run its call, report back.
func (r *Runner) converse(ctx context.Context, ep *episode.Episode, tr *trajectory.Trajectory, l Limits, a Attempt) (trajectory.ExitReason, error) {
	tr.Messages = r.Protocol.Prompt(Prompt{Issue: a.Task.ProblemStatement, RepoRoot: ep.RepoRoot(), Limits: l, Instruction: r.Instruction})
	tools := r.Protocol.Tools()
	var used int64  // context tokens of the last call
	var pending int // bytes of messages added since then
	formatErrors := 0
	for turn := 1; ; turn++ {
		// A prompt that cannot fit would only earn a 400 from the server.
		if used > 0 && used+model.EstimateTokens(pending) >= int64(l.ContextTokens) {
			return trajectory.ExitContext, nil
		}
		rep, err := r.Client.Complete(ctx, model.Request{Messages: tr.Messages, Tools: tools, Seed: a.Seed})
		if err != nil {
			var me *model.ModelError
			if ctx.Err() == nil && errors.As(err, &me) {
				tr.Retries.Add(me.Retries)
				if model.ContextOverflow(err) {
					return trajectory.ExitContext, nil
				}
				tr.Error = me.Error()
				return trajectory.ExitModelError, nil
			}
			return "", err
		}
		tr.Turns = turn
		tr.Messages = append(tr.Messages, rep.Message)
		tr.ModelCalls = append(tr.ModelCalls, trajectory.ModelCall{Turn: turn, PromptTokens: rep.Usage.PromptTokens,
			CompletionTokens: rep.Usage.CompletionTokens, Estimated: rep.Usage.Estimated, Cost: rep.Cost,
			FinishReason: rep.FinishReason, Retries: rep.Retries.Total(), Seconds: rep.Duration.Seconds(),
			Reasoning: rep.Reasoning})
		tr.Retries.Add(rep.Retries)
		tr.ModelSeconds += rep.Duration.Seconds()
		tr.Cost += rep.Cost
		tr.Tokens.Prompt += rep.Usage.PromptTokens
		tr.Tokens.Completion += rep.Usage.CompletionTokens
		tr.Tokens.Estimated = tr.Tokens.Estimated || rep.Usage.Estimated
		used, pending = rep.Usage.PromptTokens+rep.Usage.CompletionTokens, 0
		tr.Tokens.Context = used
		modelSecs := rep.Duration.Seconds()

		// CWM's order: context, then turns, then the reply's content.
		switch {
		case used > int64(l.ContextTokens):
			return trajectory.ExitContext, nil
		case l.MaxCost > 0 && tr.Cost >= l.MaxCost:
			return trajectory.ExitCost, nil
		case turn >= l.MaxTurns:
			return trajectory.ExitMaxTurns, nil
		}

		calls, ferr := r.Protocol.Parse(rep.Message)
		if ferr != nil {
			// A reply without a call after a submission is the final
			// response that ends a solved episode.
			if tr.SubmittedPatch != nil && (!l.Strict || strings.Contains(rep.Message.Content, "##")) {
				return trajectory.ExitSubmitted, nil
			}
			tr.Steps = append(tr.Steps, trajectory.Step{Turn: turn, Action: rep.Message.Content, Observation: ferr.Error(),
				FormatError: true, ModelSeconds: modelSecs})
			formatErrors++
			if l.Strict || formatErrors >= l.MaxFormatErrors {
				return trajectory.ExitFormatErrors, nil
			}
			m := r.Protocol.Reject(ferr)
			tr.Messages = append(tr.Messages, m)
			pending += len(m.Content)
			continue
		}
		allInvalid := true
		for _, c := range calls {
			t0 := time.Now()
			obs, err := r.Protocol.Run(ctx, ep.Toolbox, c)
			if err != nil {
				return "", fmt.Errorf("run tool %s: %w", c.Tool, err)
			}
			obs.Text = TruncateText(obs.Text, l.MaxObservationTokens*4)
			st := trajectory.Step{Turn: turn, Tool: c.Tool, Action: c.Input, Observation: obs.Text, OK: obs.OK,
				FormatError: obs.Invalid, ModelSeconds: modelSecs, Seconds: time.Since(t0).Seconds(), Sim: obs.Sim}
			modelSecs = 0
			if c.Tool == "bash" && !obs.Invalid {
				code := obs.ExitCode
				st.ExitCode = &code
			}
			tr.Steps = append(tr.Steps, st)
			allInvalid = allInvalid && obs.Invalid
			if c.Tool == "submit" && obs.OK {
				p := obs.Patch
				tr.SubmittedPatch = &p
			}
			m := r.Protocol.Result(c, obs, Budget{RemainingTurns: l.MaxTurns - turn, UsedTokens: used, ContextTokens: l.ContextTokens})
			tr.Messages = append(tr.Messages, m)
			pending += len(m.Content)
		}
		if !allInvalid {
			formatErrors = 0
			continue
		}
		formatErrors++
		if l.Strict || formatErrors >= l.MaxFormatErrors {
			return trajectory.ExitFormatErrors, nil
		}
	}
}

// TruncateText keeps the first max bytes of s (at a character boundary)
// and marks the cut as CWM's truncation does, with "[...]": what a tool's
// output becomes past Limits.MaxObservationTokens.
func TruncateText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "[...]"
}
