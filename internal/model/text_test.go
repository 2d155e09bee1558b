package model

import (
	"context"
	"testing"

	"cwm/internal/model/modeltest"
)

// TestCompleteText sends a raw prompt with special tokens to /v1/completions
// and reads the text back, with the request's stop and seed, usage, and
// retries counted as for chat.
func TestCompleteText(t *testing.T) {
	script, calls := failing(503)
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		if !r.Text() {
			return modeltest.Reply{Status: 400, Error: "want a text completion"}
		}
		if rep := script(r); rep.Status != 0 {
			return rep
		}
		return modeltest.Reply{Content: `"6"`, Usage: &modeltest.Usage{PromptTokens: 40, CompletionTokens: 3}}
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := testClient(t, srv.URL, ClientConfig{Sampling: Sampling{MaxTokens: 64, Stop: []string{"never"}}})
	seed := int64(7)
	prompt := "<|begin_of_text|><|trace_context_start|>def f(): pass\n<|frame_sep|>"
	rep, err := c.CompleteText(context.Background(), TextRequest{Prompt: prompt, Stop: []string{"<|frame_sep|>"}, Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Message.Content != `"6"` || rep.Usage.PromptTokens != 40 || rep.Usage.CompletionTokens != 3 || rep.Retries.ServerError != 1 || calls.Load() != 2 {
		t.Fatalf("reply %+v after %d calls", rep, calls.Load())
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	if last.Prompt != prompt || len(last.Stop) != 1 || last.Stop[0] != "<|frame_sep|>" || last.Seed == nil || *last.Seed != 7 || *last.MaxTokens != 64 {
		t.Fatalf("request: prompt %q stop %q seed %v max_tokens %v", last.Prompt, last.Stop, last.Seed, last.MaxTokens)
	}
}
