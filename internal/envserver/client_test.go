package envserver

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"cwm/clients/go/envclient"
)

// The Go client drives both APIs: REST episodes by id, /ws sessions, a
// clone attached from a second session, errors with OpenEnv's codes.
func TestGoClient(t *testing.T) {
	const token = "go-client-token"
	f := newFixture(t, func(o *Options) { o.Token = token })
	ctx := context.Background()
	c := envclient.New(f.url, token, nil)

	r, err := c.Create(ctx, map[string]any{"task_id": "calc-1"})
	if err != nil || r.EpisodeID == "" || r.Done {
		t.Fatalf("Create = %+v, %v", r, err)
	}
	r2, err := c.Step(ctx, r.EpisodeID, map[string]any{"tool": "bash", "arguments": "echo hi"})
	var o struct{ Output string }
	if err != nil || json.Unmarshal(r2.Observation, &o) != nil || o.Output != "hi" {
		t.Errorf("Step = %+v, %v", r2, err)
	}
	cl, err := c.Clone(ctx, r.EpisodeID)
	if err != nil || cl.ID() == "" || cl["step_count"] != 1.0 {
		t.Errorf("Clone = %v, %v", cl, err)
	}
	if st, err := c.State(ctx, cl.ID()); err != nil || st["task_id"] != "calc-1" {
		t.Errorf("State = %v, %v", st, err)
	}
	if err := c.Close(ctx, r.EpisodeID); err != nil {
		t.Errorf("Close: %v", err)
	}
	var e *envclient.Error
	if _, err := c.Step(ctx, r.EpisodeID, map[string]any{"text": "x"}); !errors.As(err, &e) || e.Status != 404 || e.Code != CodeSessionError {
		t.Errorf("Step on a closed episode: %v, want 404 SESSION_ERROR", err)
	}
	if _, err := envclient.New(f.url, "wrong", nil).Create(ctx, nil); !errors.As(err, &e) || e.Status != 401 {
		t.Errorf("a wrong token: %v, want 401", err)
	}

	s, err := c.Dial(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Reset(ctx, map[string]any{"kind": "shell", "env": "calc-env"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(ctx, map[string]any{"text": "<tool: bash>\ncd /tmp\n</tool>"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(ctx, map[string]any{"colour": 1}); !errors.As(err, &e) || e.Code != CodeValidationError {
		t.Errorf("a bad action: %v, want VALIDATION_ERROR", err)
	}
	st, err := s.Clone(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := c.Dial(ctx, st.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	r3, err := s2.Step(ctx, map[string]any{"text": "<tool: bash>\npwd\n</tool>"})
	if err != nil || json.Unmarshal(r3.Observation, &o) != nil || o.Output != "/tmp" {
		t.Errorf("a step in the attached clone: %+v, %v", r3, err)
	}
	if st, err := s2.State(ctx); err != nil || st.ID() == "" || st["step_count"] != 2.0 {
		t.Errorf("the clone's State = %v, %v", st, err)
	}
}
