package eval

import (
	"context"
	"errors"

	"cwm/internal/model"
)

// ask sends a prompt on api with sample's seed (seed+sample when a seed is
// set).
func ask(ctx context.Context, c *model.Client, api API, pr Prompt, seed *int64, sample int) (model.Reply, error) {
	var s *int64
	if seed != nil {
		v := *seed + int64(sample)
		s = &v
	}
	if api == Chat {
		return c.Complete(ctx, model.Request{Messages: pr.Messages, Seed: s})
	}
	return c.CompleteText(ctx, model.TextRequest{Prompt: pr.Text, Stop: pr.Stop, Seed: s})
}

// asModelError reports whether err is the model server failing after its
// retries.
func asModelError(err error, target **model.ModelError) bool { return errors.As(err, target) }
