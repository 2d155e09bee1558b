package eval_test

import (
	"context"
	"errors"
	"io"
	"maps"
	"slices"

	"cwm/internal/batch"
	"cwm/internal/jsonl"
	"cwm/internal/model"
	"cwm/internal/shard"
)

// EchoStage is cwm eval echo as a batch stage: a line per prompt, keyed by
// its id. (docs/architecture.md's recipe for a new stage; this file keeps
// it compiling.)
var EchoStage = batch.Stage{Name: "eval echo", LineKey: jsonl.Field("id")}

type EchoLine struct {
	ID     string `json:"id"`
	Answer string `json:"answer"`
}

// RunEcho asks the model to repeat each prompt; a model server failing an
// item is set aside for the next run.
func RunEcho(ctx context.Context, c *model.Client, prompts map[string]string, in, out string,
	part shard.Shard, progress io.Writer) (batch.StageRun[string], error) {
	ids := slices.Sorted(maps.Keys(prompts))
	return batch.RunStage(ctx, batch.Job[string, EchoLine]{Stage: &EchoStage, Label: "eval echo",
		Items: ids, Key: func(id string) string { return id }, Out: out, Shard: part,
		Inputs: []string{in}, Workers: 8, Progress: progress,
		Do: func(ctx context.Context, _ int, id string) (EchoLine, error) {
			rep, err := c.CompleteText(ctx, model.TextRequest{Prompt: prompts[id]})
			return EchoLine{ID: id, Answer: rep.Message.Content}, err
		},
		Outcome: func(EchoLine) string { return "answered" },
		Aside: func(_ string, err error) string {
			if errors.As(err, new(*model.ModelError)) {
				return "model_error"
			}
			return ""
		}})
}

func Example_stage() {
	_ = RunEcho
}
