// Package model talks to an OpenAI-compatible chat completions endpoint
// (vLLM, SGLang, Ollama, llama.cpp's server, OpenAI itself): the chat
// messages in OpenAI's format, the client with cwm's own retries (counted
// by cause, with backoff and Retry-After), token usage and its estimate
// when a server reports none, costs, and the reasoning fields reasoning
// models' servers return beside a message. It knows nothing of tools'
// effects or episodes: cwm/internal/agent drives it.
package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"cwm/internal/errkind"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
)

// ClientConfig configures a model client.
type ClientConfig struct {
	// BaseURL is the OpenAI-compatible endpoint, e.g.
	// http://localhost:8000/v1 for vLLM.
	BaseURL string
	// APIKey is sent as a bearer token; local servers usually ignore it.
	APIKey string
	// Model is the model name as the server knows it.
	Model    string
	Sampling Sampling
	// MaxRetries is how many times a request is retried after a 429, a 5xx,
	// a network error or a timeout (default 6; negative: never).
	MaxRetries int
	// Backoff is the delay before the first retry (default 1s); it doubles
	// with each retry up to MaxBackoff (default 60s). A server's
	// Retry-After overrides it, within MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// RequestTimeout bounds one HTTP attempt (default 10m: long generations
	// on a busy server are slow, but a hung connection must not stall an
	// episode forever).
	RequestTimeout time.Duration
	// PriceInput and PriceOutput are USD per million prompt and completion
	// tokens; zero means cost is not tracked.
	PriceInput, PriceOutput float64
	// HTTPClient replaces the default HTTP client (tests, proxies).
	HTTPClient *http.Client
}

// Sampling holds the sampling parameters sent with every request. Nil and
// zero fields are left to the server's defaults.
type Sampling struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	Stop        []string `json:"stop,omitempty"`
}

// Client calls a chat completions endpoint through the official OpenAI
// library, with cwm's own retry loop so that retries are counted and the
// backoff is visible in trajectories. A Client is safe for concurrent use.
type Client struct {
	cfg ClientConfig
	oa  openai.Client
}

// NewClient returns a client for cfg.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.BaseURL == "" {
		return nil, errkind.New(errkind.Usage, "model client: no base URL")
	}
	if cfg.Model == "" {
		return nil, errkind.New(errkind.Usage, "model client: no model name")
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 6
	}
	if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = time.Minute
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Minute
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		// The library's own retries would hide how often the server failed.
		option.WithMaxRetries(0),
	}
	hc := cfg.HTTPClient
	if hc == nil {
		// Go's default keeps two idle connections per host; dozens of
		// episodes talking to one server would open a connection per
		// request instead of reusing them.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 1024
		hc = &http.Client{Transport: tr}
	}
	opts = append(opts, option.WithHTTPClient(hc))
	return &Client{cfg: cfg, oa: openai.NewClient(opts...)}, nil
}

// Model is the model name the client asks for.
func (c *Client) Model() string { return c.cfg.Model }

// Request is one chat completion request.
type Request struct {
	Messages []Message
	// Tools are offered for native function calling (none: text only).
	Tools []Tool
	// Seed, when set, overrides the sampling seed (per-sample seeds).
	Seed *int64
	// TopLogprobs, when positive, asks for the log probability of each
	// generated token and of that many alternatives at each position
	// (OpenAI's logprobs and top_logprobs; vLLM and SGLang serve them).
	TopLogprobs int
}

// TokenLogprob is one generated token's log probability, with the most
// likely alternatives at its position.
type TokenLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	// Top holds the alternatives, the token itself usually among them.
	Top []TopLogprob `json:"top_logprobs"`
}

// TopLogprob is an alternative token at a position.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
}

// Usage is the token usage of one call.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// Estimated is set when the server reported no usage and the counts
	// are bytes/4 estimates.
	Estimated bool `json:"estimated,omitempty"`
}

// Retries counts retried attempts by cause.
type Retries struct {
	RateLimited int `json:"rate_limited"` // 429
	ServerError int `json:"server_error"` // 5xx, 408, 409
	Network     int `json:"network"`      // connection errors, broken replies
	Timeout     int `json:"timeout"`      // RequestTimeout passed
}

// Total is the number of retries.
func (r Retries) Total() int { return r.RateLimited + r.ServerError + r.Network + r.Timeout }

// Add counts o's retries too.
func (r *Retries) Add(o Retries) {
	r.RateLimited += o.RateLimited
	r.ServerError += o.ServerError
	r.Network += o.Network
	r.Timeout += o.Timeout
}

// Reply is the model's answer to a Request.
type Reply struct {
	Message Message
	// Reasoning is the thinking a reasoning model's server returns beside
	// the message (reasoning_content, or reasoning), if any. It is kept
	// out of Message: it is not sent back to the model.
	Reasoning    string
	FinishReason string
	// Logprobs are the generated tokens' log probabilities, when the
	// request asked for them and the server sent them.
	Logprobs []TokenLogprob
	Usage    Usage
	// Cost is in USD (0 when prices are not configured).
	Cost    float64
	Retries Retries
	// Duration covers all attempts and backoff.
	Duration time.Duration
}

// ModelError is returned when the endpoint keeps failing: retries are
// exhausted or the failure is not worth retrying (a 400, an empty reply).
type ModelError struct {
	Attempts int
	Retries  Retries
	Err      error
}

func (e *ModelError) Error() string {
	return fmt.Sprintf("model endpoint failed after %d attempts: %v", e.Attempts, e.Err)
}

func (e *ModelError) Unwrap() error { return e.Err }

// Kind is errkind.Unavailable: the server, not the request, failed.
func (e *ModelError) Kind() errkind.Kind { return errkind.Unavailable }

// ContextOverflow reports whether err is the server refusing a prompt
// longer than the model's context (a 400 that says so, as vLLM and OpenAI
// word it): the episode ran out of context rather than the server failing.
func ContextOverflow(err error) bool {
	var apierr *openai.Error
	if !errors.As(err, &apierr) || apierr.StatusCode != http.StatusBadRequest {
		return false
	}
	m := strings.ToLower(apierr.Message + " " + apierr.Code)
	return strings.Contains(m, "context length") || strings.Contains(m, "context_length") || strings.Contains(m, "context window")
}

// Complete sends req and returns the first choice. Retryable failures are
// retried with exponential backoff; when they run out, or on a failure that
// retrying cannot fix, the error is a *ModelError. Cancelling ctx returns
// ctx's error at once.
func (c *Client) Complete(ctx context.Context, req Request) (Reply, error) {
	start := time.Now()
	params, err := c.params(req)
	if err != nil {
		return Reply{}, err
	}
	var rep Reply
	res, err := withRetries(ctx, c, &rep.Retries, func(ctx context.Context) (*openai.ChatCompletion, error) {
		return c.attempt(ctx, params)
	}, func(res *openai.ChatCompletion) bool { return len(res.Choices) == 0 })
	if err != nil {
		return Reply{}, err
	}
	c.fill(&rep, res, req.Messages)
	rep.Duration = time.Since(start)
	return rep, nil
}

// withRetries makes attempts until one succeeds, a failure is not worth
// retrying, or the retries run out (then the error is a *ModelError),
// counting the retries in rs by cause. A result empty reports as empty
// (no choices) is a failure that retrying cannot fix.
func withRetries[T any](ctx context.Context, c *Client, rs *Retries, attempt func(context.Context) (T, error), empty func(T) bool) (T, error) {
	var zero T
	for n := 0; ; n++ {
		res, err := attempt(ctx)
		if ctx.Err() != nil {
			return zero, ctx.Err()
		}
		if err == nil {
			if empty(res) {
				return zero, &ModelError{Attempts: n + 1, Retries: *rs, Err: errors.New("reply has no choices")}
			}
			return res, nil
		}
		cause, retry := classify(err)
		if !retry || n >= c.cfg.MaxRetries {
			return zero, &ModelError{Attempts: n + 1, Retries: *rs, Err: err}
		}
		switch cause {
		case "rate_limited":
			rs.RateLimited++
		case "server_error":
			rs.ServerError++
		case "timeout":
			rs.Timeout++
		default:
			rs.Network++
		}
		t := time.NewTimer(c.backoff(n, err))
		select {
		case <-ctx.Done():
			t.Stop()
			return zero, ctx.Err()
		case <-t.C:
		}
	}
}

func (c *Client) attempt(ctx context.Context, params openai.ChatCompletionNewParams) (*openai.ChatCompletion, error) {
	actx, cancel := context.WithTimeoutCause(ctx, c.cfg.RequestTimeout, errRequestTimeout)
	defer cancel()
	res, err := c.oa.Chat.Completions.New(actx, params)
	if err != nil && context.Cause(actx) == errRequestTimeout {
		return nil, errRequestTimeout
	}
	return res, err
}

var errRequestTimeout = errors.New("model request timed out")

// classify says whether err is worth another attempt, and why it happened.
func classify(err error) (cause string, retry bool) {
	var apierr *openai.Error
	if errors.As(err, &apierr) {
		switch s := apierr.StatusCode; {
		case s == http.StatusTooManyRequests:
			return "rate_limited", true
		case s >= 500, s == http.StatusRequestTimeout, s == http.StatusConflict:
			return "server_error", true
		}
		return "client_error", false
	}
	if errors.Is(err, errRequestTimeout) {
		return "timeout", true
	}
	// Refused connections, resets and unparsable bodies: a server that is
	// restarting or overloaded looks like this.
	return "network", true
}

// backoff is the delay before retry number attempt+1: exponential with
// jitter, so that many episodes hit by the same outage do not retry in
// lockstep, or what the server's Retry-After asks for.
func (c *Client) backoff(attempt int, err error) time.Duration {
	var apierr *openai.Error
	if errors.As(err, &apierr) && apierr.Response != nil {
		if s, perr := strconv.Atoi(apierr.Response.Header.Get("Retry-After")); perr == nil && s >= 0 {
			return min(time.Duration(s)*time.Second, c.cfg.MaxBackoff)
		}
	}
	d := c.cfg.Backoff << min(attempt, 30)
	if d <= 0 || d > c.cfg.MaxBackoff {
		d = c.cfg.MaxBackoff
	}
	return d/2 + rand.N(d/2+1)
}

func (c *Client) params(req Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(c.cfg.Model)}
	p.Messages = make([]openai.ChatCompletionMessageParamUnion, len(req.Messages))
	for i, m := range req.Messages {
		// Sent as the stored JSON, so what the trajectory records is byte
		// for byte what the server received.
		b, err := json.Marshal(m)
		if err != nil {
			return p, fmt.Errorf("encode message %d: %w", i, err)
		}
		p.Messages[i] = param.Override[openai.ChatCompletionMessageParamUnion](json.RawMessage(b))
	}
	o := c.sampling(req.Seed, nil)
	p.Temperature, p.TopP, p.MaxTokens, p.Seed = o.temperature, o.topP, o.maxTokens, o.seed
	if len(o.stop) > 0 {
		p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: o.stop}
	}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        t.Name,
			Description: param.NewOpt(t.Description),
			Parameters:  shared.FunctionParameters(t.Parameters),
		}))
	}
	if req.TopLogprobs > 0 {
		p.Logprobs = param.NewOpt(true)
		p.TopLogprobs = param.NewOpt(int64(req.TopLogprobs))
	}
	if len(req.Tools) > 0 {
		// One call per turn keeps the native protocol's turns comparable
		// with CWM's, which allows exactly one.
		p.ParallelToolCalls = param.NewOpt(false)
	}
	return p, nil
}

func (c *Client) fill(rep *Reply, res *openai.ChatCompletion, sent []Message) {
	ch := res.Choices[0]
	rep.FinishReason = ch.FinishReason
	rep.Message = Message{Role: RoleAssistant, Content: ch.Message.Content}
	rep.Reasoning = reasoning(ch.Message.RawJSON())
	for _, lp := range ch.Logprobs.Content {
		t := TokenLogprob{Token: lp.Token, Logprob: lp.Logprob}
		for _, alt := range lp.TopLogprobs {
			t.Top = append(t.Top, TopLogprob{Token: alt.Token, Logprob: alt.Logprob})
		}
		rep.Logprobs = append(rep.Logprobs, t)
	}
	for _, tc := range ch.Message.ToolCalls {
		typ := tc.Type
		if typ == "" {
			typ = "function"
		}
		rep.Message.ToolCalls = append(rep.Message.ToolCalls, ToolCall{ID: tc.ID, Type: typ,
			Function: FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
	}
	if res.JSON.Usage.Valid() && res.Usage.PromptTokens+res.Usage.CompletionTokens > 0 {
		rep.Usage = Usage{PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens}
	} else {
		rep.Usage = Usage{
			PromptTokens:     EstimateTokens(messagesBytes(sent)),
			CompletionTokens: EstimateTokens(messagesBytes([]Message{rep.Message})),
			Estimated:        true,
		}
	}
	rep.Cost = (float64(rep.Usage.PromptTokens)*c.cfg.PriceInput + float64(rep.Usage.CompletionTokens)*c.cfg.PriceOutput) / 1e6
}

// reasoning extracts the thinking that servers of reasoning models put
// beside an assistant message: vLLM and SGLang as reasoning_content, others
// as reasoning.
func reasoning(raw string) string {
	if !strings.Contains(raw, `"reasoning`) {
		return ""
	}
	var m struct {
		ReasoningContent *string `json:"reasoning_content"`
		Reasoning        *string `json:"reasoning"`
	}
	if json.Unmarshal([]byte(raw), &m) != nil {
		return ""
	}
	switch {
	case m.ReasoningContent != nil && *m.ReasoningContent != "":
		return *m.ReasoningContent
	case m.Reasoning != nil:
		return *m.Reasoning
	}
	return ""
}

// samplingParams are the sampling parameters of one request in the
// library's optional form (unset: left to the server).
type samplingParams struct {
	temperature, topP param.Opt[float64]
	maxTokens, seed   param.Opt[int64]
	stop              []string
}

// sampling is the client's sampling parameters with a request's seed and
// stop sequences, when set, in place of the client's.
func (c *Client) sampling(seed *int64, stop []string) samplingParams {
	s := c.cfg.Sampling
	var o samplingParams
	if s.Temperature != nil {
		o.temperature = param.NewOpt(*s.Temperature)
	}
	if s.TopP != nil {
		o.topP = param.NewOpt(*s.TopP)
	}
	if s.MaxTokens > 0 {
		o.maxTokens = param.NewOpt(int64(s.MaxTokens))
	}
	if seed == nil {
		seed = s.Seed
	}
	if seed != nil {
		o.seed = param.NewOpt(*seed)
	}
	o.stop = s.Stop
	if stop != nil {
		o.stop = stop
	}
	return o
}
