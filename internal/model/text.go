package model

import (
	"context"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
)

// TextRequest is one request to the text completions endpoint
// (/v1/completions): a raw prompt, sent as it is, so that special tokens
// written in it (CWM's <|trace_context_start|>, a chat template rendered
// by hand) reach the model as the server tokenizes them.
type TextRequest struct {
	Prompt string
	// Stop, when set, replaces the client's stop sequences.
	Stop []string
	// Seed, when set, overrides the sampling seed (per-sample seeds).
	Seed *int64
}

// CompleteText sends req to the completions endpoint and returns the first
// choice, its text as the reply message's content. Retries, usage (or its
// estimate), costs and errors are as Complete's.
func (c *Client) CompleteText(ctx context.Context, req TextRequest) (Reply, error) {
	start := time.Now()
	p := openai.CompletionNewParams{
		Model:  openai.CompletionNewParamsModel(c.cfg.Model),
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: param.NewOpt(req.Prompt)},
	}
	o := c.sampling(req.Seed, req.Stop)
	p.Temperature, p.TopP, p.MaxTokens, p.Seed = o.temperature, o.topP, o.maxTokens, o.seed
	if len(o.stop) > 0 {
		p.Stop = openai.CompletionNewParamsStopUnion{OfStringArray: o.stop}
	}
	var rep Reply
	res, err := withRetries(ctx, c, &rep.Retries, func(ctx context.Context) (*openai.Completion, error) {
		actx, cancel := context.WithTimeoutCause(ctx, c.cfg.RequestTimeout, errRequestTimeout)
		defer cancel()
		res, err := c.oa.Completions.New(actx, p)
		if err != nil && context.Cause(actx) == errRequestTimeout {
			return nil, errRequestTimeout
		}
		return res, err
	}, func(res *openai.Completion) bool { return len(res.Choices) == 0 })
	if err != nil {
		return Reply{}, err
	}
	ch := res.Choices[0]
	rep.FinishReason = string(ch.FinishReason)
	rep.Message = Message{Role: RoleAssistant, Content: ch.Text}
	if res.JSON.Usage.Valid() && res.Usage.PromptTokens+res.Usage.CompletionTokens > 0 {
		rep.Usage = Usage{PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens}
	} else {
		rep.Usage = Usage{PromptTokens: EstimateTokens(len(req.Prompt)), CompletionTokens: EstimateTokens(len(ch.Text)), Estimated: true}
	}
	rep.Cost = (float64(rep.Usage.PromptTokens)*c.cfg.PriceInput + float64(rep.Usage.CompletionTokens)*c.cfg.PriceOutput) / 1e6
	rep.Duration = time.Since(start)
	return rep, nil
}
