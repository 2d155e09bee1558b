package model

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/model/modeltest"
)

func testClient(t *testing.T, url string, cfg ClientConfig) *Client {
	t.Helper()
	cfg.BaseURL, cfg.Model = url, "fake-model"
	if cfg.Backoff == 0 {
		cfg.Backoff, cfg.MaxBackoff = time.Millisecond, 4*time.Millisecond
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// failing answers the first len(statuses) requests with those statuses,
// then succeeds.
func failing(statuses ...int) (modeltest.Script, *atomic.Int32) {
	var n atomic.Int32
	return func(r *modeltest.Request) modeltest.Reply {
		i := int(n.Add(1)) - 1
		if i < len(statuses) {
			return modeltest.Reply{Status: statuses[i]}
		}
		return modeltest.Text("ok")
	}, &n
}

func TestClientRetries(t *testing.T) {
	cases := []struct {
		name       string
		statuses   []int
		maxRetries int
		want       Retries
		fails      bool
	}{
		{"success", nil, 3, Retries{}, false},
		{"429 twice", []int{429, 429}, 3, Retries{RateLimited: 2}, false},
		{"500 then 503", []int{500, 503}, 3, Retries{ServerError: 2}, false},
		{"mixed", []int{429, 502, 429}, 3, Retries{RateLimited: 2, ServerError: 1}, false},
		{"retries run out", []int{500, 500, 500, 500, 500}, 3, Retries{ServerError: 3}, true},
		{"400 is not retried", []int{400}, 3, Retries{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			script, calls := failing(c.statuses...)
			srv, err := modeltest.Start(script, true)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			cl := testClient(t, srv.URL, ClientConfig{MaxRetries: c.maxRetries})
			rep, err := cl.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}})
			var me *ModelError
			switch {
			case c.fails && !errors.As(err, &me):
				t.Fatalf("Complete = %v, want a *ModelError", err)
			case c.fails:
				if !cmp.Equal(me.Retries, c.want) || me.Attempts != c.want.Total()+1 {
					t.Errorf("ModelError retries %+v after %d attempts, want %+v", me.Retries, me.Attempts, c.want)
				}
			case err != nil:
				t.Fatalf("Complete: %v", err)
			default:
				if !cmp.Equal(rep.Retries, c.want) || rep.Message.Content != "ok" {
					t.Errorf("Complete = %q with retries %+v, want ok with %+v", rep.Message.Content, rep.Retries, c.want)
				}
			}
			if got := int(calls.Load()); got != c.want.Total()+1 {
				t.Errorf("server saw %d requests, want %d", got, c.want.Total()+1)
			}
		})
	}
}

func TestClientRetryAfter(t *testing.T) {
	var n atomic.Int32
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		if n.Add(1) == 1 {
			return modeltest.Reply{Status: 429, RetryAfter: 1}
		}
		return modeltest.Text("ok")
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cl := testClient(t, srv.URL, ClientConfig{Backoff: time.Millisecond, MaxBackoff: 5 * time.Second})
	start := time.Now()
	if _, err := cl.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("retried after %v, want the server's Retry-After of 1s", d)
	}
}

func TestClientDeadServer(t *testing.T) {
	srv, err := modeltest.Start(func(*modeltest.Request) modeltest.Reply { return modeltest.Text("ok") }, false)
	if err != nil {
		t.Fatal(err)
	}
	srv.Close() // nothing listens at its address any more
	cl := testClient(t, srv.URL, ClientConfig{MaxRetries: 2})
	_, err = cl.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}})
	var me *ModelError
	if !errors.As(err, &me) || me.Retries.Network != 2 {
		t.Fatalf("Complete = %v, want a ModelError after 2 network retries", err)
	}

	hang, err := modeltest.Start(func(*modeltest.Request) modeltest.Reply { return modeltest.Reply{Hangup: true} }, false)
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	cl = testClient(t, hang.URL, ClientConfig{MaxRetries: 1})
	if _, err := cl.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}); !errors.As(err, &me) || me.Retries.Network != 1 {
		t.Fatalf("Complete with hang-ups = %v, want a ModelError after 1 network retry", err)
	}

	slow, err := modeltest.Start(func(*modeltest.Request) modeltest.Reply { return modeltest.Reply{Delay: time.Minute} }, false)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	cl = testClient(t, slow.URL, ClientConfig{MaxRetries: 1, RequestTimeout: 100 * time.Millisecond})
	if _, err := cl.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}); !errors.As(err, &me) || me.Retries.Timeout != 1 {
		t.Fatalf("Complete with a slow server = %v, want a ModelError after 1 timeout retry", err)
	}
}

// testTools are functions offered to the model, as a protocol offers them.
var testTools = []Tool{
	{Name: "bash", Description: "Runs a command.", Parameters: map[string]any{"type": "object",
		"properties": map[string]any{"command": map[string]any{"type": "string"}}, "required": []string{"command"}}},
	{Name: "submit", Description: "Submits a patch file.", Parameters: map[string]any{"type": "object",
		"properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"}}},
}

func TestClientRequest(t *testing.T) {
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		if strings.Contains(r.Issue(), "no usage") {
			return modeltest.Reply{Content: "12345678", NoUsage: true}
		}
		return modeltest.Reply{Content: "fine", Usage: &modeltest.Usage{PromptTokens: 1000, CompletionTokens: 10}}
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	temp, topP, seed, seed2 := 0.7, 0.95, int64(11), int64(12)
	cl := testClient(t, srv.URL, ClientConfig{APIKey: "sk-test", PriceInput: 3, PriceOutput: 15,
		Sampling: Sampling{Temperature: &temp, TopP: &topP, MaxTokens: 512, Seed: &seed, Stop: []string{"</tool>\n\n"}}})
	msgs := []Message{{Role: RoleSystem, Content: "sys"}, {Role: RoleUser, Content: "hi"},
		{Role: RoleAssistant, Content: "", ToolCalls: []ToolCall{{ID: "c1", Type: "function", Function: FunctionCall{Name: "bash", Arguments: `{"command":"ls"}`}}}},
		{Role: RoleTool, Content: "a.py", ToolCallID: "c1"}}
	rep, err := cl.Complete(context.Background(), Request{Messages: msgs, Seed: &seed2, Tools: testTools})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Usage{PromptTokens: 1000, CompletionTokens: 10}); rep.Usage != want || rep.Cost != (1000*3+10*15)/1e6 {
		t.Errorf("usage %+v cost %v, want %+v and %v", rep.Usage, rep.Cost, want, (1000*3+10*15)/1e6)
	}
	got := srv.Requests()[0]
	if got.Model != "fake-model" || *got.Temperature != temp || *got.TopP != topP || *got.MaxTokens != 512 || *got.Seed != seed2 ||
		!cmp.Equal(got.Stop, []string{"</tool>\n\n"}) || len(got.Tools) != len(testTools) {
		t.Errorf("request = %+v, want the sampling parameters, the episode's seed and %d tools", got, len(testTools))
	}
	if h := got.Header.Get("Authorization"); h != "Bearer sk-test" {
		t.Errorf("Authorization = %q", h)
	}
	wantMsgs := []modeltest.Message{{Role: "system", Content: "sys"}, {Role: "user", Content: "hi"},
		{Role: "assistant", ToolCalls: []modeltest.ToolCall{modeltest.Call("c1", "bash", `{"command":"ls"}`)}},
		{Role: "tool", Content: "a.py", ToolCallID: "c1"}}
	if diff := cmp.Diff(wantMsgs, got.Messages); diff != "" {
		t.Errorf("messages sent (-want +got):\n%s", diff)
	}

	rep, err = cl.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "no usage, 24 bytes long"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Usage{PromptTokens: 6, CompletionTokens: 2, Estimated: true}); rep.Usage != want {
		t.Errorf("usage without a report = %+v, want the bytes/4 estimate %+v", rep.Usage, want)
	}
}

func TestReasoningField(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{`{"role":"assistant","content":"x","reasoning_content":"think"}`, "think"},
		{`{"role":"assistant","content":"x","reasoning":"think2"}`, "think2"},
		{`{"role":"assistant","content":"x","reasoning_content":null,"reasoning":"r"}`, "r"},
		{`{"role":"assistant","content":"x","reasoning_content":"","reasoning":"r"}`, "r"},
		{`{"role":"assistant","content":"the reasoning is sound"}`, ""},
		{`{"role":"assistant","content":"x","reasoning_content":null}`, ""},
	} {
		if got := reasoning(c.raw); got != c.want {
			t.Errorf("reasoning(%s) = %q, want %q", c.raw, got, c.want)
		}
	}
}

// TestLogprobs asks for top logprobs and reads them back, as a verifier
// reading P("YES") does; without asking, none are requested or returned.
func TestLogprobs(t *testing.T) {
	lps := []modeltest.TokenLogprob{
		{Token: "YES", Logprob: -0.1, Top: []modeltest.TopLogprob{{Token: "YES", Logprob: -0.1}, {Token: "NO", Logprob: -2.4}, {Token: "MAYBE", Logprob: -5}}},
	}
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		return modeltest.Reply{Content: "YES", Logprobs: lps}
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cl := testClient(t, srv.URL, ClientConfig{})
	rep, err := cl.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "ok?"}}, TopLogprobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []TokenLogprob{{Token: "YES", Logprob: -0.1, Top: []TopLogprob{{"YES", -0.1}, {"NO", -2.4}}}}
	if !cmp.Equal(rep.Logprobs, want) {
		t.Errorf("Logprobs = %+v, want %+v", rep.Logprobs, want)
	}
	if r := srv.Requests()[0]; !r.Logprobs || r.TopLogprobs != 2 {
		t.Errorf("request logprobs %v top_logprobs %d, want true and 2", r.Logprobs, r.TopLogprobs)
	}
	rep, err = cl.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "ok?"}}})
	if err != nil || rep.Logprobs != nil || srv.Requests()[1].Logprobs {
		t.Errorf("without TopLogprobs: logprobs %v requested %v (%v); want none", rep.Logprobs, srv.Requests()[1].Logprobs, err)
	}
}
