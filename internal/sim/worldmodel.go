package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"cwm/internal/model"
	"cwm/internal/trajectory"
)

// Causes of a failed world-model attempt, as counted in the record.
const (
	CauseInvalidJSON = "invalid_json"
	CauseOversized   = "oversized"
	CauseTimeout     = "timeout"
	CauseModelError  = "model_error"
	CauseMissingFile = "missing_file"
)

// WorldModelConfig configures the world-model endpoint.
type WorldModelConfig struct {
	BaseURL, APIKey, Model string
	// Timeout bounds one attempt (default 60 s).
	Timeout time.Duration
	// Attempts is how many replies are asked for before the step runs
	// for real (default 3).
	Attempts int
	// MaxReplyBytes caps the bytes read of one HTTP reply (default 4 MiB);
	// a longer one is cut off unread and counts as oversized.
	MaxReplyBytes int64
	// HTTPClient replaces the default transport (tests).
	HTTPClient *http.Client
}

// WorldModel asks an OpenAI-compatible endpoint for commands' outputs.
// It is safe for concurrent use.
type WorldModel struct {
	cfg    WorldModelConfig
	client *model.Client
}

// NewWorldModel returns the world model cfg names.
func NewWorldModel(cfg WorldModelConfig) (*WorldModel, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Minute
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 3
	}
	if cfg.MaxReplyBytes <= 0 {
		cfg.MaxReplyBytes = 4 << 20
	}
	base := http.DefaultTransport
	if cfg.HTTPClient != nil && cfg.HTTPClient.Transport != nil {
		base = cfg.HTTPClient.Transport
	}
	zero := 0.0
	c, err := model.NewClient(model.ClientConfig{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Model: cfg.Model,
		Sampling: model.Sampling{Temperature: &zero},
		// cwm counts and bounds the world model's attempts itself; the
		// client's own timeout is only a backstop behind Timeout.
		MaxRetries: -1, RequestTimeout: 2 * cfg.Timeout,
		HTTPClient: &http.Client{Transport: cappedTransport{base: base, max: cfg.MaxReplyBytes}}})
	if err != nil {
		return nil, fmt.Errorf("world model: %w", err)
	}
	return &WorldModel{cfg: cfg, client: c}, nil
}

// Model is the world model's name.
func (w *WorldModel) Model() string { return w.cfg.Model }

// errOversized ends reading a reply past MaxReplyBytes.
var errOversized = errors.New("world model reply over its byte cap")

// errAttemptTimeout is the cause of an attempt's context past Timeout.
var errAttemptTimeout = errors.New("world model attempt timed out")

// cappedTransport stops reading a reply body at max bytes, so that a
// server streaming a gigabyte costs a few MiB of memory.
type cappedTransport struct {
	base http.RoundTripper
	max  int64
}

func (t cappedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if res.ContentLength > t.max {
		res.Body.Close()
		return nil, errOversized
	}
	res.Body = &cappedBody{rc: res.Body, left: t.max}
	return res, nil
}

type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errOversized
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// attempt is one world-model request's outcome: an execution, or the
// cause it failed.
type attempt struct {
	exec    *trajectory.Execution
	cause   string
	err     error
	seconds float64
}

// ask makes one attempt and parses its reply as an execution.
func (w *WorldModel) ask(ctx context.Context, msgs []model.Message) attempt {
	content, a := w.complete(ctx, msgs)
	if a.cause != "" || a.err != nil {
		return a
	}
	e, err := ParseReply(content)
	if err != nil {
		a.cause = CauseInvalidJSON
		return a
	}
	a.exec = e
	return a
}

// complete makes one request. ctx's own end is returned as err; every
// other failure is a cause.
func (w *WorldModel) complete(ctx context.Context, msgs []model.Message) (string, attempt) {
	t0 := time.Now()
	actx, cancel := context.WithTimeoutCause(ctx, w.cfg.Timeout, errAttemptTimeout)
	defer cancel()
	rep, err := w.client.Complete(actx, model.Request{Messages: msgs})
	a := attempt{seconds: time.Since(t0).Seconds()}
	switch {
	case ctx.Err() != nil:
		a.err = ctx.Err()
	case context.Cause(actx) == errAttemptTimeout:
		a.cause = CauseTimeout
	case errors.Is(err, errOversized) || (err != nil && strings.Contains(err.Error(), errOversized.Error())):
		a.cause = CauseOversized
	case err != nil:
		a.cause = CauseModelError
	}
	return rep.Message.Content, a
}

// ParseReply reads a world model's reply: one JSON object with a string
// stdout, a string stderr and an integer exit_code (0 to 255, or -1),
// alone or inside one ```json fence, with no other field.
func ParseReply(content string) (*trajectory.Execution, error) {
	var r struct {
		Stdout   *string `json:"stdout"`
		Stderr   *string `json:"stderr"`
		ExitCode *int    `json:"exit_code"`
	}
	if err := decodeReply(content, &r); err != nil {
		return nil, fmt.Errorf("world model reply: %w", err)
	}
	switch {
	case r.Stdout == nil || r.Stderr == nil || r.ExitCode == nil:
		return nil, errors.New("world model reply: want stdout, stderr and exit_code")
	case *r.ExitCode < -1 || *r.ExitCode > 255:
		return nil, fmt.Errorf("world model reply: exit_code %d out of range", *r.ExitCode)
	}
	return &trajectory.Execution{Stdout: *r.Stdout, Stderr: *r.Stderr, ExitCode: *r.ExitCode}, nil
}

// decodeReply decodes a model's reply into v, strictly: one JSON object,
// alone or inside one ```json fence, with no field v lacks and nothing
// after it.
func decodeReply(content string, v any) error {
	s := strings.TrimSpace(content)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(strings.TrimPrefix(s, "```json"), "```")
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
	}
	d := json.NewDecoder(strings.NewReader(s))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("text after the JSON object")
	}
	return nil
}
