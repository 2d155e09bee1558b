package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"cwm/internal/command"
	"cwm/internal/eval"
	"cwm/internal/model"
	"cwm/internal/sandbox"
	"cwm/internal/shard"
)

// evalOutput are the flags of every eval command besides the endpoint's:
// where its lines go (one per what), its shard, how it reports.
type evalOutput struct {
	out, shard  string
	json, quiet bool
}

func (o *evalOutput) register(fs *flag.FlagSet, per, shardWhat string) {
	fs.StringVar(&o.out, "out", "", "output `file` (JSONL, one line per "+per+"; appended to, resumed)")
	shardFlag(fs, &o.shard, shardWhat)
	fs.BoolVar(&o.json, "json", false, "print the summary as JSON")
	fs.BoolVar(&o.quiet, "quiet", false, "print no progress")
}

// part is the shard --shard names.
func (o *evalOutput) part() (shard.Shard, error) {
	part, err := shard.Parse(o.shard)
	if err != nil {
		return part, command.Usagef("--shard: %v", err)
	}
	return part, nil
}

// thinkFlags are the thinking tokens of the reasoning mode.
type thinkFlags struct{ open, close string }

func (t *thinkFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.open, "think-open", eval.DefaultThink.Open, "reasoning on --api completions: the `text` that opens the thinking, injected after the assistant header (e.g. <|reasoning_thinking_start|> for a model that thinks in such tokens)")
	fs.StringVar(&t.close, "think-close", eval.DefaultThink.Close, "reasoning: the `text` that closes the thinking; the answer is read after its last occurrence")
}

func (t *thinkFlags) think() eval.Think { return eval.Think{Open: t.open, Close: t.close} }

// parseAPI checks --api.
func parseAPI(s string) (eval.API, error) {
	if api := eval.API(s); api == eval.Completions || api == eval.Chat {
		return api, nil
	}
	return "", command.Usagef("--api %q: want completions or chat", s)
}

// finishEval ends an eval command: an interrupted run says how to resume;
// otherwise the summary is printed (as JSON with --json), and the command
// fails when the model server failed items (the stage marked its shard
// done otherwise).
func finishEval(ctx context.Context, e *command.Env, err error, asJSON bool, sum interface{ Write(io.Writer) },
	modelErrors int) error {
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted; run the same command again to resume: %w", ctx.Err())
		}
		return err
	}
	if asJSON {
		err = writeJSON(e.Stdout, sum)
	} else {
		sum.Write(e.Stdout)
	}
	if err != nil {
		return err
	}
	if modelErrors > 0 {
		return fmt.Errorf("the model server failed %d requests after its retries; run again to retry them", modelErrors)
	}
	return nil
}

// checkRun checks the flags every run of an eval command needs: the
// endpoint and --out.
func checkRun(ep *endpointFlags, o *evalOutput) error {
	if err := ep.check(); err != nil {
		return err
	}
	if o.out == "" {
		return command.Usagef("--out is required")
	}
	return nil
}

// sandboxedRun is what eval cruxeval and eval halt run with: the shard,
// the model client and the sandboxed Python servers that score answers
// (or run halting programs); stop closes the servers and their runtime.
type sandboxedRun struct {
	part   shard.Shard
	client *model.Client
	runner *eval.Scorer
	stop   func()
}

// startSandboxedRun parses --shard, makes the client (maxTokens unless
// --max-tokens says) and starts workers sandboxed Python servers with the
// given timeout (0: the scorer's).
func startSandboxedRun(ctx context.Context, e *command.Env, ep *endpointFlags, o *evalOutput, maxTokens, workers int,
	timeout time.Duration) (sandboxedRun, error) {
	var r sandboxedRun
	var err error
	if r.part, err = o.part(); err != nil {
		return r, err
	}
	if r.client, err = ep.client(maxTokens); err != nil {
		return r, err
	}
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: e.Home, Log: e.Log, Warm: -1})
	if err != nil {
		return r, err
	}
	if r.runner, err = eval.NewScorer(ctx, rt, workers, timeout); err != nil {
		rt.Close()
		return r, err
	}
	r.stop = func() { r.runner.Close(); rt.Close() }
	return r, nil
}

// promptOf is the item --show-prompt shows: the one whose id is id, or
// the first when id is empty.
func promptOf[T any](items []T, id, what string, idOf func(*T) string) (*T, error) {
	if id == "" {
		return &items[0], nil
	}
	var p *T
	for i := range items {
		if idOf(&items[i]) == id {
			p = &items[i]
		}
	}
	if p == nil {
		return nil, command.Usagef("--id %q: no such %s", id, what)
	}
	return p, nil
}

// showPrompt prints a prompt exactly as it is sent (stdout) under a
// header (stderr).
func showPrompt(e *command.Env, header string, pr eval.Prompt) {
	fmt.Fprintf(e.Stderr, "# %s, stop %q\n", header, pr.Stop)
	// Exactly the text sent: a trace prompt ends without a newline.
	fmt.Fprint(e.Stdout, pr.Text)
	for _, m := range pr.Messages {
		fmt.Fprintf(e.Stdout, "--- %s\n%s\n", m.Role, m.Content)
	}
}

// evalEndpoint is the eval commands' use of endpointFlags: all of them,
// with maxTokens what --max-tokens' 0 means.
func evalEndpoint(maxTokens string) endpointUse {
	return endpointUse{sampling: true, maxTokens: maxTokens, topP: true, seedOf: "problem", concurrency: true}
}
