package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"cwm/internal/agent"
	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/episode"
	"cwm/internal/model"
	"cwm/internal/shard"
	"cwm/internal/task"
	"cwm/internal/trajectory"
)

type forageCmd struct {
	tasks, out           string
	protocol, toolRole   string
	history              string
	ep                   endpointFlags
	samples, concurrency int
	shard                string
	limits               agent.Limits
	stop                 command.StringList
	priceIn, priceOut    float64
	json, quiet          bool

	gradeFlags
	noGrade bool
	sim     simFlags
}

func (*forageCmd) Name() string { return "forage" }
func (*forageCmd) Synopsis() string {
	return "run an agent on tasks against a model endpoint and record trajectories"
}
func (*forageCmd) Usage() string {
	return `--tasks TASKS.jsonl --model NAME --base-url URL --out TRAJ.jsonl [flags]
Runs --samples episodes per task, --concurrency at a time. Each episode
starts a sandbox on the task's environment, plants the task's bug so that
git cannot show it, and lets the model work through the tools of
--protocol (cwm: CWM's <tool: ...> text protocol; openai: native function
calling) until it submits a patch or a limit ends it. Each episode becomes
one line of --out: the messages (OpenAI chat format), the steps, the exit
reason, the final diff, the submitted patch, tokens, cost and timings.

--out is appended to and crash safe: a re-run skips the (task, sample)
pairs already in it. --shard i/n runs the pairs whose hash falls in shard
i of n (default: the Slurm array task's or Kubernetes indexed job's).
The API key is read from the variable --api-key-env names. Prints a
summary at the end (--json: as JSON). Exits 1 when an episode could not
run, or the model server failed it after its retries (model_error: such
episodes go to TRAJ.jsonl.model_errors.jsonl, not --out); a re-run retries
both. See docs/forage.md.

--backend sim runs the episodes on the sim backend: file actions and
reading commands run for real, commands that execute code are answered
by the world model --sim-model at --sim-base-url (its key from
--sim-api-key-env), corrected by real runs every --real-every commands;
each such step's record holds the context sent and the (predicted, real)
pair. --record-context records the same contexts on the real backend,
for cwm export transitions. See docs/sim.md.

Examples:
  cwm forage --tasks tasks.jsonl --model Qwen/Qwen3-32B --base-url http://localhost:8000/v1 --out traj.jsonl
  cwm forage --tasks tasks.jsonl --model qwen3:32b --base-url http://localhost:11434/v1 \
      --protocol openai --samples 4 --temperature 0.7 --out traj.jsonl`
}

func (c *forageCmd) Flags(fs *flag.FlagSet) {
	d := agent.DefaultLimits
	fs.StringVar(&c.tasks, "tasks", "", "tasks `file` (JSONL, cwm's task schema)")
	fs.StringVar(&c.out, "out", "", "trajectories `file` (JSONL; appended to, resumed)")
	c.ep.register(fs, endpointUse{sampling: true, per: "reply", topP: true, seedOf: "task"})
	fs.StringVar(&c.protocol, "protocol", "cwm", "tool protocol: cwm (text tool blocks) or openai (function calling)")
	fs.StringVar(&c.toolRole, "tool-role", "tool", "`role` of tool results in the cwm protocol: tool, or user for servers that refuse tool messages without a tool_call_id")
	fs.StringVar(&c.history, "history", "squash", "how the bug is hidden in git: squash (HEAD becomes a root commit with the bug) or amend (HEAD re-made, ancestors kept: they may show the fix)")
	fs.IntVar(&c.samples, "samples", 1, "episodes per task (best@k, GRPO groups)")
	fs.IntVar(&c.concurrency, "concurrency", 8, "episodes at once")
	shardFlag(fs, &c.shard, "run the (task, sample) pairs")
	fs.IntVar(&c.limits.MaxTurns, "max-turns", d.MaxTurns, "model replies per episode")
	fs.IntVar(&c.limits.ContextTokens, "context", d.ContextTokens, "context window in `tokens`")
	fs.DurationVar(&c.limits.CommandTimeout, "command-timeout", d.CommandTimeout, "limit of one bash command")
	fs.DurationVar(&c.limits.WallTime, "episode-timeout", d.WallTime, "wall-clock limit of one episode")
	fs.Float64Var(&c.limits.MaxCost, "max-cost", 0, "`USD` an episode may spend (0: no limit; needs --price-in/--price-out)")
	fs.IntVar(&c.limits.MaxFormatErrors, "format-errors", d.MaxFormatErrors, "consecutive replies without a tool call that end an episode")
	fs.BoolVar(&c.limits.Strict, "strict", false, "CWM's strict format: the first format error ends the episode and the final response needs a markdown summary")
	fs.Var(&c.stop, "stop", "stop `sequence` (repeatable)")
	fs.Float64Var(&c.priceIn, "price-in", 0, "`USD` per million prompt tokens, for costs")
	fs.Float64Var(&c.priceOut, "price-out", 0, "`USD` per million completion tokens, for costs")
	fs.BoolVar(&c.json, "json", false, "print the summary as JSON")
	fs.BoolVar(&c.quiet, "quiet", false, "print no progress")
	c.gradeFlags.register(fs)
	fs.BoolVar(&c.noGrade, "no-grade", false, "do not grade episodes (reward fields stay null; grade later with cwm reward)")
	c.sim.register(fs)
}

func (c *forageCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	switch {
	case c.tasks == "" || c.out == "" || c.ep.model == "" || c.ep.baseURL == "":
		return command.Usagef("--tasks, --out, --model and --base-url are required")
	case c.samples < 1 || c.concurrency < 1:
		return command.Usagef("--samples and --concurrency must be at least 1")
	case c.limits.MaxTurns < 1 || c.limits.ContextTokens < 1 || c.limits.CommandTimeout < time.Second || c.limits.WallTime <= 0 || c.limits.MaxFormatErrors < 1:
		return command.Usagef("--max-turns, --context and --format-errors must be positive, --command-timeout at least 1s")
	}
	if err := c.mapping.Validate(); err != nil {
		return err
	}
	if h := episode.History(c.history); h != episode.HistorySquash && h != episode.HistoryAmend {
		return command.Usagef("--history %q: want squash or amend", c.history)
	}
	part, err := shard.Parse(c.shard)
	if err != nil {
		return command.Usagef("--shard: %v", err)
	}
	simOpts, isSim, err := c.sim.options()
	if err != nil {
		return err
	}
	if !isSim && simOpts != nil && !simOpts.RecordOnly {
		simOpts = nil // a world model named for nothing: the real backend
	}
	proto, err := agent.NewProtocol(c.protocol, c.toolRole)
	if err != nil {
		return err
	}
	cfg := c.ep.config(0)
	cfg.Sampling.Stop, cfg.PriceInput, cfg.PriceOutput = c.stop, c.priceIn, c.priceOut
	client, err := model.NewClient(cfg)
	if err != nil {
		return err
	}
	tasks, err := task.Load(c.tasks)
	if err != nil {
		return fmt.Errorf("load tasks: %w", err)
	}
	if len(tasks) == 0 {
		return fmt.Errorf("no tasks in %s", c.tasks)
	}
	sbs, closeRT, err := openSandboxes(e, 0)
	if err != nil {
		return err
	}
	defer closeRT()
	opts := agent.ForageOptions{Tasks: tasks, Samples: c.samples, Out: c.out, Store: env.NewStore(e.Home),
		Workers: c.concurrency, Shard: part, TasksFile: c.tasks, Seed: c.ep.seed.ptr(),
		OnFailure: func(t *task.Task, sample int, tr *trajectory.Trajectory, err error) {
			if err != nil {
				fmt.Fprintf(e.Stderr, "cwm forage: %s sample %d: %v\n", t.InstanceID, sample, err)
			} else {
				fmt.Fprintf(e.Stderr, "cwm forage: %s sample %d: the model server failed: %s\n", t.InstanceID, sample, tr.Error)
			}
		}}
	if !c.noGrade {
		opts.Grade = &c.mapping
	}
	if !c.quiet {
		opts.Progress = e.Stderr
	}
	runner := &agent.Runner{Sandboxes: sbs, Client: client, Protocol: proto, Limits: c.limits,
		History: episode.History(c.history), Log: e.Log, Sim: simOpts}
	f, err := agent.NewForage(runner, opts)
	if err != nil {
		return err
	}
	if !c.quiet && f.Done() > 0 {
		fmt.Fprintf(e.Stderr, "cwm forage: %d of %d episodes already in %s\n", f.Done(), f.Episodes(), c.out)
	}
	sum, err := f.Run(ctx)
	if err != nil {
		return err
	}
	if c.json {
		writeJSON(e.Stdout, sum)
	} else {
		sum.Write(e.Stdout)
	}
	var why []string
	if n := sum.ModelErrors; n > 0 {
		why = append(why, fmt.Sprintf("the model server failed %d of %d episodes (model_error; kept with the reason in %s, not in %s)",
			n, sum.Ran+sum.Failed+n, agent.ModelErrorsPath(c.out), c.out))
	}
	if sum.Failed > 0 {
		why = append(why, fmt.Sprintf("%d episodes could not run (see the log above)", sum.Failed))
	}
	if len(why) > 0 {
		return fmt.Errorf("%s; run again to retry them", strings.Join(why, "; "))
	}
	return nil
}
