// Package modeltest provides a local OpenAI-compatible chat completions
// server that replays scripted replies, for tests and benchmarks of the
// model client and of agent episodes. It is the one fake in cwm's agent
// tests: the model endpoint. Everything else an episode touches
// (sandboxes, sockets, processes) is real.
package modeltest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Message is a chat message as the server sees it. The package keeps its
// own types, rather than package model's, so that model's tests can use it.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a native function call.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Call makes a function call to name with JSON arguments args.
func Call(id, name, args string) ToolCall {
	tc := ToolCall{ID: id, Type: "function"}
	tc.Function.Name, tc.Function.Arguments = name, args
	return tc
}

// Usage is reported token usage.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
}

// Request is a chat completion request as the server received it.
type Request struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	Tools       []any     `json:"tools"`
	Temperature *float64  `json:"temperature"`
	TopP        *float64  `json:"top_p"`
	MaxTokens   *int      `json:"max_tokens"`
	Seed        *int64    `json:"seed"`
	Stop        []string  `json:"stop"`
	// Prompt is the prompt of a text completion (/v1/completions); empty
	// for a chat completion.
	Prompt      string `json:"prompt"`
	Logprobs    bool   `json:"logprobs"`
	TopLogprobs int    `json:"top_logprobs"`
	// Header is the request's HTTP header.
	Header http.Header `json:"-"`
	// Body is the request's body as received.
	Body []byte `json:"-"`
}

// Turn is the number of assistant messages in the request: 0 for the
// first call of an episode.
func (r *Request) Turn() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// Issue is the first user message (where the task's issue is), the prompt
// of a text completion, or "".
func (r *Request) Issue() string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return r.Prompt
}

// Text reports whether the request is a text completion (/v1/completions).
func (r *Request) Text() bool { return r.Messages == nil && r.Prompt != "" }

// Reply is what the server answers to one request.
type Reply struct {
	// Status, when not 0 or 200, is an error status (429, 500, ...).
	Status int
	// RetryAfter is sent as the Retry-After header (seconds) with Status.
	RetryAfter int
	// Error is the error message sent with Status.
	Error string
	// Content and ToolCalls make the assistant message.
	Content   string
	ToolCalls []ToolCall
	// Reasoning, when set, is sent as the message's reasoning_content, as
	// vLLM and SGLang send a reasoning model's thinking.
	Reasoning string
	// Logprobs, when set and the request asks for logprobs, are sent as
	// the choice's logprobs.content: one per generated token, each with
	// its alternatives (cut to the request's top_logprobs).
	Logprobs []TokenLogprob
	// Usage overrides the reported usage; by default it is bytes/4 of the
	// request and reply. NoUsage omits it.
	Usage   *Usage
	NoUsage bool
	// Delay is waited before answering.
	Delay time.Duration
	// Hangup closes the connection without an answer.
	Hangup bool
}

// TokenLogprob is a generated token's log probability and its
// alternatives, as OpenAI's logprobs.content holds them.
type TokenLogprob struct {
	Token   string       `json:"token"`
	Logprob float64      `json:"logprob"`
	Top     []TopLogprob `json:"top_logprobs"`
}

// TopLogprob is one alternative at a position.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
}

// Script decides the reply to a request.
type Script func(r *Request) Reply

// Server is a running fake endpoint.
type Server struct {
	// URL is the base URL to give a client, ending in /v1.
	URL string

	script Script
	srv    *http.Server
	ln     net.Listener
	done   chan struct{}

	record bool

	mu       sync.Mutex // guards requests
	requests []*Request
}

// Start serves script on 127.0.0.1 at a free port. Requests are recorded
// unless record is false (benchmarks).
func Start(script Script, record bool) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for fake model server: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String() + "/v1", script: script, ln: ln, record: record, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.complete)
	mux.HandleFunc("POST /v1/completions", s.complete)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln)
	}()
	return s, nil
}

// Close stops the server at once: open connections are dropped, as when
// a model server dies.
func (s *Server) Close() {
	s.srv.Close()
	<-s.done
}

// Requests returns the recorded requests in arrival order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

func (s *Server) complete(w http.ResponseWriter, hr *http.Request) {
	var req Request
	raw, err := io.ReadAll(hr.Body)
	if err == nil {
		err = json.Unmarshal(raw, &req)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return
	}
	req.Header, req.Body = hr.Header.Clone(), raw
	if s.record {
		s.mu.Lock()
		s.requests = append(s.requests, &req)
		s.mu.Unlock()
	}
	rep := s.script(&req)
	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-hr.Context().Done():
			return
		}
	}
	if rep.Hangup {
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
		return
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		if rep.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(rep.RetryAfter))
		}
		msg := rep.Error
		if msg == "" {
			msg = "scripted failure"
		}
		writeError(w, rep.Status, msg)
		return
	}
	text := hr.URL.Path == "/v1/completions"
	msg := map[string]any{"role": "assistant", "content": rep.Content}
	if rep.Reasoning != "" {
		msg["reasoning_content"] = rep.Reasoning
	}
	finish := "stop"
	if len(rep.ToolCalls) > 0 {
		msg["tool_calls"] = rep.ToolCalls
		finish = "tool_calls"
	}
	choice := map[string]any{"index": 0, "message": msg, "finish_reason": finish}
	if req.Logprobs && rep.Logprobs != nil {
		content := make([]TokenLogprob, len(rep.Logprobs))
		for i, t := range rep.Logprobs {
			content[i] = t
			if len(t.Top) > req.TopLogprobs {
				content[i].Top = t.Top[:req.TopLogprobs]
			}
		}
		choice["logprobs"] = map[string]any{"content": content}
	}
	body := map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": req.Model,
		"choices": []any{choice},
	}
	if text {
		body = map[string]any{
			"id": "cmpl-fake", "object": "text_completion", "created": 0, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "text": rep.Content, "logprobs": nil, "finish_reason": finish}},
		}
	}
	if !rep.NoUsage {
		u := rep.Usage
		if u == nil {
			n := len(req.Prompt)
			for _, m := range req.Messages {
				n += len(m.Content)
			}
			u = &Usage{PromptTokens: int64(n / 4), CompletionTokens: int64(len(rep.Content)/4 + 1)}
		}
		body["usage"] = map[string]any{"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens,
			"total_tokens": u.PromptTokens + u.CompletionTokens}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(body)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "fake", "code": status}})
}

// ByIssue scripts episodes by task: the episode whose first user message
// contains a key gets that key's replies in order, one per turn. A turn
// past the end, or an unknown issue, gets fallback.
func ByIssue(replies map[string][]Reply, fallback Reply) Script {
	return func(r *Request) Reply {
		issue := r.Issue()
		for k, rs := range replies {
			if strings.Contains(issue, k) {
				if t := r.Turn(); t < len(rs) {
					return rs[t]
				}
				return fallback
			}
		}
		return fallback
	}
}

// Text is a reply with content only.
func Text(s string) Reply { return Reply{Content: s} }

// Tool is a reply holding one CWM text tool call.
func Tool(name, input string) Reply {
	return Reply{Content: "<tool: " + name + ">\n" + input + "\n</tool>"}
}
