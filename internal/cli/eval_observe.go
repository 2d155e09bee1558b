package cli

import (
	"context"
	"flag"
	"fmt"

	"cwm/internal/command"
	"cwm/internal/eval"
)

type evalObserveCmd struct {
	endpointFlags
	evalOutput
	trajectories, api string
	perTraj           int
}

func (*evalObserveCmd) Name() string { return "eval observe" }
func (*evalObserveCmd) Synopsis() string {
	return "score a model on predicting what the environment returned to an agent's actions"
}
func (*evalObserveCmd) Usage() string {
	return `--trajectories TRAJ.jsonl --model NAME --base-url URL --out OUT.jsonl [flags]
For each action of each trajectory (forage's output, or reward's), gives the
model the conversation up to and including the action and asks for the
observation the environment returned (the tool's output as the agent saw
it). --api completions (default) renders CWM's chat template and opens the
tool's reply (<|start_header_id|>tool: NAME<|end_header_id|>); --api chat
sends the conversation as text messages and asks for the output.

Scores: exact match; match after normalising what cannot be predicted
(durations, clock times and dates, /tmp paths, memory addresses, process
ids, commit hashes); difflib's similarity ratio of the normalised texts;
overall and per tool. Format errors are not observations of the
environment and are left out. --per-trajectory N keeps N actions of each
trajectory, spread over it.

Each prediction is one line of --out (appended to, resumed). See
docs/eval.md.

Example:
  cwm eval observe --trajectories traj.jsonl --model cwm --base-url http://localhost:8000/v1 --out observe.jsonl`
}

func (c *evalObserveCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.trajectories, "trajectories", "", "trajectories `file` (forage or reward output)")
	fs.StringVar(&c.api, "api", "completions", "endpoint: completions (raw text) or chat (messages)")
	fs.IntVar(&c.perTraj, "per-trajectory", 0, "at most `N` actions per trajectory (0: all)")
	c.evalOutput.register(fs, "prediction", "run the predictions")
	c.endpointFlags.register(fs, evalEndpoint("4096"))
}

func (c *evalObserveCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	if c.trajectories == "" || c.out == "" {
		return command.Usagef("--trajectories and --out are required")
	}
	if err := c.endpointFlags.check(); err != nil {
		return err
	}
	api, err := parseAPI(c.api)
	if err != nil {
		return err
	}
	if c.perTraj < 0 {
		return command.Usagef("--per-trajectory must not be negative")
	}
	part, err := c.part()
	if err != nil {
		return err
	}
	obs, err := eval.LoadObservations(c.trajectories, c.perTraj)
	if err != nil {
		return err
	}
	if len(obs) == 0 {
		return fmt.Errorf("%s: no actions with an observation", c.trajectories)
	}
	client, err := c.client(4096)
	if err != nil {
		return err
	}
	opts := eval.ObserveOptions{Observations: obs, API: api, Client: client, Out: c.out, Shard: part,
		Input: c.trajectories, PerTrajectory: c.perTraj, Concurrency: c.concurrency,
		OnModelError: func(key string, err error) { fmt.Fprintf(e.Stderr, "cwm eval observe: %s: %v\n", key, err) }}
	opts.Progress = progressTo(e, c.quiet)
	sum, err := eval.RunObserve(ctx, opts)
	if err != nil {
		return finishEval(ctx, e, err, c.json, nil, 0)
	}
	return finishEval(ctx, e, nil, c.json, sum, sum.ModelErrors)
}
