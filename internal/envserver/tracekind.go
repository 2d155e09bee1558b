package envserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"cwm/internal/errkind"
	"cwm/internal/trace"
	"cwm/internal/traceline"
	"cwm/internal/tracer"
)

// TraceRecord is a trace a trace episode runs on (traceline.Line).
type TraceRecord = traceline.Line

// LoadTraces reads traces files for Options.Traces; incomplete traces are
// skipped and counted (traceline.Load).
func LoadTraces(paths []string) (recs []TraceRecord, skipped int, err error) {
	return traceline.Load(paths...)
}

// traceAction is a step of a trace episode: the model's prediction of the
// next frame, in CWM's text (`<|line_sep|>{...}<|action_sep|>SOURCE\n<|frame_sep|>`).
type traceAction struct {
	Frame    *string        `json:"frame"`
	Metadata map[string]any `json:"metadata"`
}

// traceObservation is what a trace reset or step observes.
type traceObservation struct {
	// Text, at reset, is the prompt: the trace's opening up to its first
	// frame. Each step's Frame is the true frame that follows (teacher
	// forcing; the last one ends with <|end_of_text|>), so the prompt and
	// the frames, concatenated, are the trace's exact text.
	Text  string `json:"text,omitempty"`
	Frame string `json:"frame"`
	// Step is how many frames have been predicted; Frames how many the
	// trace has (known once the episode is done: the end is hidden).
	Step        int            `json:"step"`
	ValidFormat bool           `json:"valid_format"`
	StateMatch  bool           `json:"state_match"`
	ActionMatch bool           `json:"action_match"`
	Diff        string         `json:"diff,omitempty"`
	ExitReason  string         `json:"exit_reason,omitempty"`
	Metadata    map[string]any `json:"metadata"`
}

// traceEpisode teacher-forces a trace: the model predicts frame i from
// the prompt and frames 0..i-1, is rewarded on how right it was, and is
// shown the true frame.
type traceEpisode struct {
	rec     *TraceRecord
	exact   bool
	pos     int
	stepper *trace.Stepper
	// sums over the steps so far
	states, actions, exacts, valid int
	total                          float64
}

// startTrace starts a trace episode on the plan's trace, or on one traced
// now from its code and call.
func (s *Server) startTrace(ctx context.Context, p *resetPlan) (episodeImpl, Result, error) {
	rec := p.trace
	if rec == nil {
		pool, err := s.tracerPool(ctx)
		if err != nil {
			return nil, Result{}, err
		}
		res := pool.Trace(ctx, tracer.Func{ID: "reset", Code: p.data.Code, Call: p.data.Call})
		if ctx.Err() != nil {
			return nil, Result{}, ctx.Err()
		}
		if !res.Status.Complete() || len(res.Frames) == 0 {
			why := res.Error
			if why == "" {
				why = string(res.Status)
			}
			return nil, Result{}, errkind.Errorf(errkind.Input, "the call cannot be traced to its end: %s", why)
		}
		t := res.Trace()
		rec = &TraceRecord{ID: "traced", Status: string(res.Status), Context: t.Context, Frames: t.Frames}
	}
	t := &traceEpisode{rec: rec, exact: p.data.Reward == "exact", stepper: &trace.Stepper{}}
	prompt := trace.TokBeginOfText + trace.TokTraceContextStart + rec.Context + trace.TokFrameSep
	return t, Result{Observation: traceObservation{Text: prompt, Metadata: map[string]any{"trace_id": rec.ID, "reward": t.mode()}}}, nil
}

func (t *traceEpisode) mode() string {
	if t.exact {
		return "exact"
	}
	return "partial"
}

// step reads one predicted frame against the true one. The reward is 1
// for the exact frame; in the partial mode, 0.5 for the state alone
// (event, locals, value) and 0.5 for the action alone (the source line);
// 0 for a prediction that is not one well-formed frame.
func (t *traceEpisode) step(_ context.Context, raw json.RawMessage) (Result, error) {
	if t.pos >= len(t.rec.Frames) {
		return Result{}, &sessionError{http.StatusConflict, "the trace has ended: reset, or start a new one"}
	}
	var a traceAction
	if err := decodeObject(raw, &a, "data"); err != nil {
		return Result{}, err
	}
	if a.Frame == nil {
		return Result{}, invalid("missing", "Field required", "data", "frame")
	}
	truth := t.rec.Frames[t.pos]
	obs := traceObservation{Step: t.pos + 1, Metadata: map[string]any{}}
	pred, st := trace.ParseLenient(strings.TrimSuffix(*a.Frame, trace.TokEndOfText))
	var state, action bool
	resolvedTruth := t.stepper.Resolve(truth)
	if st.ValidFormat() && len(pred.Frames) == 1 {
		obs.ValidFormat = true
		p := t.stepper.Resolve(pred.Frames[0])
		state, action, obs.Diff = trace.MatchFrame(p, resolvedTruth)
	} else {
		obs.Diff = fmt.Sprintf("not one well-formed frame (%d frames, %d format errors)", len(pred.Frames), st.FormatErrors)
	}
	t.stepper.Take(truth)
	obs.StateMatch, obs.ActionMatch = state, action
	r := 0.0
	switch {
	case state && action:
		r = 1
	case !t.exact && (state || action):
		r = 0.5
	}
	t.count(obs, r)
	t.pos++
	frame := trace.AppendFrame(nil, truth)
	done := t.pos == len(t.rec.Frames)
	if done {
		frame = append(frame, trace.TokEndOfText...)
		obs.ExitReason = "end_of_trace"
		obs.Metadata = t.summary()
	}
	obs.Frame = string(frame)
	return Result{Observation: obs, Reward: &r, Done: done}, nil
}

func (t *traceEpisode) count(obs traceObservation, r float64) {
	if obs.ValidFormat {
		t.valid++
	}
	if obs.StateMatch {
		t.states++
	}
	if obs.ActionMatch {
		t.actions++
	}
	if obs.StateMatch && obs.ActionMatch {
		t.exacts++
	}
	t.total += r
}

// summary is the metadata of the last step: the episode's fractions, as
// the trace-prediction metrics of CWM-SPEC 1.6 count them.
func (t *traceEpisode) summary() map[string]any {
	n := float64(max(t.pos, 1))
	return map[string]any{"trace_id": t.rec.ID, "frames": t.pos, "state_exact": float64(t.states) / n,
		"action_exact": float64(t.actions) / n, "exact_frames": float64(t.exacts) / n,
		"valid_format": float64(t.valid) / n, "mean_reward": t.total / n, "reward": t.mode()}
}

func (t *traceEpisode) state() map[string]any {
	st := map[string]any{"trace_id": t.rec.ID, "frames_predicted": t.pos, "reward": t.mode()}
	if t.finished() {
		st["summary"] = t.summary()
	}
	return st
}

func (t *traceEpisode) finished() bool { return t.pos >= len(t.rec.Frames) }

func (t *traceEpisode) clone(context.Context) (episodeImpl, error) {
	c := *t
	c.stepper = t.stepper.Clone()
	return &c, nil
}

func (t *traceEpisode) close() {}
