package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"cwm/internal/agent"
	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/model"
	"cwm/internal/search"
	"cwm/internal/task"
)

type searchCmd struct {
	tasks, out         string
	ep                 endpointFlags
	valueModel, valURL string
	valueKeyEnv        string
	protocol, toolRole string
	algo               string
	width, depth       int
	budgetCalls        int
	budgetExecs        int
	rollout            int
	limits             agent.Limits
	sim                simFlags
	json               bool
}

func (*searchCmd) Name() string { return "search" }
func (*searchCmd) Synopsis() string {
	return "beam search or MCTS over checkpointed episodes of tasks, scored by a value model and the real verifier"
}
func (*searchCmd) Usage() string {
	return `--tasks TASKS.jsonl --model NAME --base-url URL --algo beam|mcts --out DIR [flags]
Searches each task's episode as a tree whose states are checkpoints. A
child state is its parent's checkpoint branched, one reply of the policy
(--model at --base-url, sampled with its own seed) run for real, and
checkpointed again. A child that submitted a patch is scored by the real
grading (reward 1 when it resolves the task, else 0) and ends its path;
any other by the value model (--value-model at --value-base-url, default
the policy's endpoint), asked for a number in [0,1] given the task
statement, the diff and the last observation.

--algo beam samples --width replies from each kept state and keeps the
--width best children, for --depth replies. --algo mcts descends by UCB1,
expands one new sample at a time (--width children at most per node),
and backpropagates the child's value; with --rollout N the child is
evaluated by playing the policy on from it for up to N replies on a
branch (graded if it submits, else the value model's estimate of where
it ended). Both stop at a resolved patch.
--budget-calls bounds model calls (policy and value) and --budget-execs
real executions (tool runs and gradings) per task: a search that runs out
ends with the best it has, and its summary says which budget.

With --backend sim, the commands that execute code are answered by the
world model --sim-model at --sim-base-url, as in cwm forage (the same
flags: --real-every corrects every Nth by a real run, --sim-reward grades
submissions by a reward model, flagged predicted); file actions and the
grading run for real. The summary counts the executions avoided.

Writes DIR/trajectories.jsonl (the best path per task, forage's
trajectory schema), DIR/tree.jsonl (every node: id, parent, depth, seed,
action, observation excerpt, value, visits, reward) and DIR/summary.json
(per task: nodes, depth, model calls, real executions, the budget that
ran out). Each task's lines are written when it finishes; a task whose
search fails is recorded with its error in summary.json, the others go
on, and the run exits 1 naming it. See docs/sim.md, "Search".

Example:
  cwm search --tasks tasks.jsonl --model Qwen/Qwen3-32B --base-url http://localhost:8000/v1 \
      --temperature 0.8 --algo mcts --width 3 --depth 30 --out search/`
}

func (c *searchCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.tasks, "tasks", "", "tasks `file` (JSONL, cwm's task schema)")
	fs.StringVar(&c.out, "out", "", "output `directory`")
	c.ep.register(fs, endpointUse{sampling: true, per: "reply", topP: true})
	fs.StringVar(&c.valueModel, "value-model", "", "the value model's `name` (default: --model)")
	fs.StringVar(&c.valURL, "value-base-url", "", "the value model's endpoint `URL` (default: --base-url)")
	fs.StringVar(&c.valueKeyEnv, "value-api-key-env", "OPENAI_API_KEY", "environment `variable` holding the value model's API key")
	fs.StringVar(&c.protocol, "protocol", "cwm", "tool protocol: cwm (text tool blocks) or openai (function calling)")
	fs.StringVar(&c.toolRole, "tool-role", "tool", "`role` of tool results in the cwm protocol: tool or user")
	fs.StringVar(&c.algo, "algo", "", "search algorithm: beam or mcts")
	fs.IntVar(&c.width, "width", 2, "K: beam's samples per state and states kept; MCTS's children per node")
	fs.IntVar(&c.depth, "depth", 20, "policy replies on a path at most")
	fs.IntVar(&c.budgetCalls, "budget-calls", 200, "model calls (policy and value) per task")
	fs.IntVar(&c.budgetExecs, "budget-execs", 200, "real executions (tool runs and gradings) per task")
	fs.IntVar(&c.rollout, "rollout", 0, "MCTS: evaluate a new child by playing the policy on for up to `N` replies (0: the value model at once)")
	fs.DurationVar(&c.limits.CommandTimeout, "command-timeout", agent.DefaultLimits.CommandTimeout, "limit of one bash command")
	c.sim.register(fs)
	fs.BoolVar(&c.json, "json", false, "print the summary as JSON")
}

func (c *searchCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	if c.tasks == "" || c.out == "" || c.ep.model == "" || c.ep.baseURL == "" || c.algo == "" {
		return command.Usagef("--tasks, --out, --model, --base-url and --algo are required")
	}
	o := search.Options{Algo: c.algo, Width: c.width, Depth: c.depth, BudgetCalls: c.budgetCalls,
		BudgetExecs: c.budgetExecs, Rollout: c.rollout, Limits: c.limits}
	if err := o.Validate(); err != nil {
		return command.Usagef("%v", err)
	}
	simOpts, isSim, err := c.sim.options()
	if err != nil {
		return err
	}
	if !isSim && simOpts != nil && !simOpts.RecordOnly {
		simOpts = nil // a world model named for nothing: the real backend
	}
	o.Sim = simOpts
	proto, err := agent.NewProtocol(c.protocol, c.toolRole)
	if err != nil {
		return err
	}
	if o.Policy, err = c.ep.client(0); err != nil {
		return err
	}
	if c.valueModel != "" || c.valURL != "" {
		cfg := c.ep.config(0)
		cfg.Sampling = model.Sampling{} // a score wants the server's defaults, not the policy's temperature
		if c.valueModel != "" {
			cfg.Model = c.valueModel
		}
		if c.valURL != "" {
			cfg.BaseURL, cfg.APIKey = c.valURL, os.Getenv(c.valueKeyEnv)
		}
		if o.Value, err = model.NewClient(cfg); err != nil {
			return err
		}
	}
	o.Protocol = proto
	tasks, err := task.Load(c.tasks)
	if err != nil {
		return fmt.Errorf("load tasks: %w", err)
	}
	if len(tasks) == 0 {
		return fmt.Errorf("no tasks in %s", c.tasks)
	}
	out, err := search.Create(c.out)
	if err != nil {
		return err
	}
	defer out.Close()
	sbs, closeRT, err := openSandboxes(e, 0)
	if err != nil {
		return err
	}
	defer closeRT()
	o.Sandboxes = sbs
	store := env.NewStore(e.Home)
	for i := range tasks {
		t := &tasks[i]
		res, err := searchTask(ctx, &o, store, t)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			fmt.Fprintf(e.Stderr, "cwm search: %s: %v\n", t.InstanceID, err)
			if err := out.Fail(t.InstanceID, o.Algo, err); err != nil {
				return err
			}
			continue
		}
		if err := out.Add(res); err != nil {
			return err
		}
		if res.Summary.Exhausted != "" {
			fmt.Fprintf(e.Stderr, "cwm search: %s: the %s budget ran out; kept the best of %d nodes\n",
				t.InstanceID, res.Summary.Exhausted, res.Summary.Nodes)
		}
	}
	if err := out.Close(); err != nil {
		return err
	}
	sums := out.Summaries()
	if c.json {
		if err := writeJSON(e.Stdout, sums); err != nil {
			return err
		}
		return failedTasks(out.Failed(), len(sums))
	}
	for _, s := range sums {
		if s.Error != "" {
			fmt.Fprintf(e.Stdout, "%s  %s  failed: %s\n", s.TaskID, s.Algo, s.Error)
			continue
		}
		r := "none"
		if s.BestReward != nil {
			r = fmt.Sprint(*s.BestReward)
		}
		avoided := ""
		if o.Sim != nil && !o.Sim.RecordOnly {
			avoided = fmt.Sprintf("  executions avoided %d", s.ExecsAvoided)
		}
		fmt.Fprintf(e.Stdout, "%s  %s  nodes %d  depth %d  model calls %d  real executions %d%s  best reward %s\n",
			s.TaskID, s.Algo, s.Nodes, s.MaxDepth, s.ModelCalls, s.Execs, avoided, r)
	}
	return failedTasks(out.Failed(), len(sums))
}

// searchTask searches one task, its environment resolved first: an
// environment missing is that task's failure, not the run's.
func searchTask(ctx context.Context, o *search.Options, store *env.Store, t *task.Task) (*search.Result, error) {
	en, err := store.Resolve(t.EnvID)
	if err != nil {
		return nil, err
	}
	return search.Run(ctx, o, t, en)
}

// failedTasks is the run's error when tasks failed: the searched ones
// are written, these are in summary.json with their errors.
func failedTasks(ids []string, n int) error {
	if len(ids) == 0 {
		return nil
	}
	return fmt.Errorf("the search of %d of %d tasks failed (%s; their errors are in %s); the others are written",
		len(ids), n, strings.Join(ids, ", "), search.SummaryFile)
}
