package search

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cwm/internal/agent"
	"cwm/internal/env"
	"cwm/internal/episode"
	"cwm/internal/errkind"
	"cwm/internal/model"
	"cwm/internal/reward"
	"cwm/internal/sim"
	"cwm/internal/task"
	"cwm/internal/trajectory"
)

// Algorithms search knows.
const (
	Beam = "beam"
	MCTS = "mcts"
)

// Options configure a search over one task's episode.
type Options struct {
	Sandboxes *env.Sandboxes
	// Policy proposes actions; Value scores states (nil: Policy's
	// endpoint asked the value prompt).
	Policy, Value *model.Client
	Protocol      agent.Protocol
	// Algo is Beam or MCTS.
	Algo string
	// Width is K: beam's candidates per state and states kept, MCTS's
	// children per node. Depth bounds the replies on a path.
	Width, Depth int
	// BudgetCalls bounds the model calls (policy and value); BudgetExecs
	// the real executions (tool runs in a sandbox and gradings). The
	// search ends with the best it has when either runs out.
	BudgetCalls, BudgetExecs int
	// Limits are the episodes' limits (command timeout, observation cap).
	Limits agent.Limits
	// UCB is MCTS's exploration constant (0: sqrt 2).
	UCB float64
	// Rollout, when positive, evaluates MCTS's new child by playing the
	// policy on from it for up to Rollout more replies (rollout.go).
	Rollout int
	// Sim, when set, runs the episodes on the sim backend: the commands
	// that execute code are answered by its world model, corrected every
	// RealEvery; with its Reward, submissions are graded by the reward
	// model instead of for real (docs/sim.md).
	Sim *sim.Options
}

// Validate says what is wrong with o, as an input error.
func (o *Options) Validate() error {
	switch {
	case o.Algo != Beam && o.Algo != MCTS:
		return errkind.Errorf(errkind.Input, "search algorithm %q: want beam or mcts", o.Algo)
	case o.Width < 1 || o.Depth < 1:
		return errkind.Errorf(errkind.Input, "search width %d and depth %d must be at least 1", o.Width, o.Depth)
	case o.BudgetCalls < 1 || o.BudgetExecs < 1:
		return errkind.Errorf(errkind.Input, "search budgets (%d model calls, %d executions) must be at least 1", o.BudgetCalls, o.BudgetExecs)
	case o.Rollout < 0:
		return errkind.Errorf(errkind.Input, "search rollout %d: want 0 (none) or more replies", o.Rollout)
	case o.Rollout > 0 && o.Algo != MCTS:
		return errkind.Errorf(errkind.Input, "a rollout (%d replies) is for --algo mcts, not %s", o.Rollout, o.Algo)
	}
	return nil
}

// Summary is what a task's search cost and found (cwm report's numbers).
type Summary struct {
	TaskID     string `json:"task_id"`
	Algo       string `json:"algo"`
	Nodes      int    `json:"nodes"`
	MaxDepth   int    `json:"max_depth"`
	ModelCalls int    `json:"model_calls"`
	ValueCalls int    `json:"value_calls"`
	Execs      int    `json:"real_executions"`
	Gradings   int    `json:"gradings"`
	// The sim backend's numbers: ExecsAvoided counts the tool calls the
	// world model answered without a real run; WorldModelCalls its
	// requests (failed ones included); Divergences the corrections whose
	// real run disagreed with the prediction; RewardCalls the reward
	// model's predictions (counted in ModelCalls too).
	ExecsAvoided    int `json:"executions_avoided"`
	WorldModelCalls int `json:"world_model_calls"`
	Divergences     int `json:"divergences"`
	RewardCalls     int `json:"reward_calls"`
	// Exhausted names the budget that ended the search ("model_calls",
	// "real_executions"); empty when the search ran its course.
	Exhausted  string   `json:"exhausted,omitempty"`
	BestNode   int      `json:"best_node"`
	BestReward *float64 `json:"best_reward"`
	Seconds    float64  `json:"seconds"`
	// Error is why the task's search failed (the other numbers are then
	// zero and nothing of it is in the other files); empty when it ran.
	Error string `json:"error,omitempty"`
}

// Result is one task's search: its best trajectory, its tree, its summary.
type Result struct {
	Best    *trajectory.Trajectory
	Tree    []Node
	Summary Summary
}

// errBudget ends a search whose budget ran out; the search keeps what it has.
type errBudget struct{ which string }

func (e *errBudget) Error() string { return "search budget of " + e.which + " exhausted" }

// run is one task's search in progress.
type run struct {
	o     *Options
	l     agent.Limits
	task  *task.Task
	env   *env.Env
	root  *episode.Episode
	nodes []*node
	sum   Summary
}

// Run searches task t (its environment e) and returns the best it found.
// The error is for the harness (a sandbox that could not start, a model
// endpoint that failed after its retries, ctx cancelled); a budget that
// runs out is a Result whose Summary.Exhausted says so.
func Run(ctx context.Context, o *Options, t *task.Task, e *env.Env) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	r := &run{o: o, l: o.Limits.WithDefaults(), task: t, env: e, sum: Summary{TaskID: t.InstanceID, Algo: o.Algo, BestNode: -1}}
	sb, err := o.Sandboxes.Open(ctx, e)
	if err != nil {
		return nil, fmt.Errorf("search task %s: %w", t.InstanceID, err)
	}
	ep, err := episode.Start(ctx, sb, t, episode.Options{CommandTimeout: r.l.CommandTimeout, RepoRoot: e.RepoDir()})
	if err != nil {
		sb.Close()
		return nil, fmt.Errorf("search task %s: %w", t.InstanceID, err)
	}
	r.root = ep
	defer r.close()
	root := &node{Node: Node{TaskID: t.InstanceID, Parent: -1}}
	if o.Sim != nil {
		so := *o.Sim
		if so.Classifier.TestCommand == "" {
			so.Classifier.TestCommand = e.Test.Command
		}
		root.sim = sim.New(ep, &so)
	}
	root.messages = o.Protocol.Prompt(agent.Prompt{Issue: t.ProblemStatement, RepoRoot: ep.RepoRoot(), Limits: r.l})
	if root.ckpt, err = ep.Checkpoint(ctx); err != nil {
		return nil, fmt.Errorf("search task %s: checkpoint the start: %w", t.InstanceID, err)
	}
	r.add(root, nil)
	if o.Algo == Beam {
		err = r.beam(ctx, root)
	} else {
		err = r.mcts(ctx, root)
	}
	if b := (*errBudget)(nil); errors.As(err, &b) {
		r.sum.Exhausted, err = b.which, nil
	}
	if err != nil {
		return nil, fmt.Errorf("search task %s: %w", t.InstanceID, err)
	}
	res := r.result()
	r.sum.Seconds = time.Since(start).Seconds()
	res.Summary = r.sum
	return res, nil
}

// close releases every checkpoint and the root episode.
func (r *run) close() {
	for _, n := range r.nodes {
		if n.ckpt != nil && !n.sharedCkpt {
			n.ckpt.Release()
		}
	}
	r.root.Close()
}

// add puts n in the tree under parent.
func (r *run) add(n, parent *node) {
	n.ID = len(r.nodes)
	n.TaskID = r.task.InstanceID
	if parent != nil {
		n.parent, n.Parent, n.Depth = parent, parent.ID, parent.Depth+1
		parent.children = append(parent.children, n)
	}
	r.nodes = append(r.nodes, n)
	r.sum.MaxDepth = max(r.sum.MaxDepth, n.Depth)
}

// spend takes one model call from the budget, or says it is exhausted.
func (r *run) spendCall() error {
	if r.sum.ModelCalls >= r.o.BudgetCalls {
		return &errBudget{"model_calls"}
	}
	r.sum.ModelCalls++
	return nil
}

// spendExec takes one real execution from the budget.
func (r *run) spendExec() error {
	if r.sum.Execs >= r.o.BudgetExecs {
		return &errBudget{"real_executions"}
	}
	r.sum.Execs++
	return nil
}

// expand asks the policy for one reply from parent (sampling seed seed),
// runs it on a branch of parent's checkpoint, and scores the child: by
// the verifier when it submitted, by the value model otherwise. The child
// joins the tree only when all of that was done.
func (r *run) expand(ctx context.Context, parent *node, seed int64) (*node, error) {
	c := parent.child(seed)
	calls, ferr, err := r.ask(ctx, c, seed)
	if err != nil {
		return nil, fmt.Errorf("ask the policy at node %d: %w", parent.ID, err)
	}
	if ferr != nil {
		c.ckpt, c.sharedCkpt = parent.ckpt, true // nothing ran: the parent's state
	} else if err := r.act(ctx, parent, c, calls); err != nil {
		return nil, err
	}
	eval := r.evaluate
	if r.o.Rollout > 0 && !c.terminal(r.o.Depth) {
		eval = r.rollout
	}
	if err := eval(ctx, c); err != nil {
		if !c.sharedCkpt {
			c.ckpt.Release()
		}
		return nil, err
	}
	r.add(c, parent)
	return c, nil
}

// ask asks the policy for the next reply of state s (sampling seed seed)
// and adds it to s. A reply without a valid tool call is answered with
// the format error (ferr) and runs nothing.
func (r *run) ask(ctx context.Context, s *node, seed int64) (calls []agent.Call, ferr *agent.FormatError, err error) {
	if err := r.spendCall(); err != nil {
		return nil, nil, err
	}
	rep, err := r.o.Policy.Complete(ctx, model.Request{Messages: s.messages, Tools: r.o.Protocol.Tools(), Seed: &seed})
	if err != nil {
		return nil, nil, err
	}
	s.turns++
	s.Action = rep.Message.Content
	s.messages = append(s.messages, rep.Message)
	s.calls = append(s.calls, trajectory.ModelCall{Turn: s.turns,
		PromptTokens: rep.Usage.PromptTokens, CompletionTokens: rep.Usage.CompletionTokens, Estimated: rep.Usage.Estimated,
		Cost: rep.Cost, FinishReason: rep.FinishReason, Seconds: rep.Duration.Seconds()})
	calls, ferr = r.o.Protocol.Parse(rep.Message)
	if ferr != nil {
		s.Observation = ferr.Error()
		s.steps = append(s.steps, trajectory.Step{Turn: s.turns, Action: rep.Message.Content, Observation: ferr.Error(), FormatError: true})
		s.messages = append(s.messages, r.o.Protocol.Reject(ferr))
	}
	return calls, ferr, nil
}

// act runs the reply's calls on a branch of parent's checkpoint and
// checkpoints the result into c.
func (r *run) act(ctx context.Context, parent, c *node, calls []agent.Call) error {
	ep, err := r.branch(ctx, parent, c)
	if err != nil {
		return err
	}
	defer ep.Close()
	if err := r.runCalls(ctx, c, ep, calls); err != nil {
		return fmt.Errorf("at node %d's child: %w", parent.ID, err)
	}
	if c.ckpt, err = ep.Checkpoint(ctx); err != nil {
		return fmt.Errorf("checkpoint node %d's child: %w", parent.ID, err)
	}
	if c.diff, err = ep.Diff(ctx); err != nil {
		c.ckpt.Release()
		return fmt.Errorf("diff at node %d's child: %w", parent.ID, err)
	}
	return nil
}

// branch opens an episode on a branch of n's checkpoint for state s, on
// the search's backend: with the sim backend, s's world-model history
// goes on from n's.
func (r *run) branch(ctx context.Context, n, s *node) (*episode.Episode, error) {
	ep, err := r.root.BranchFrom(ctx, n.ckpt)
	if err != nil {
		return nil, fmt.Errorf("branch from node %d: %w", n.ID, err)
	}
	if n.sim != nil {
		s.sim = n.sim.Clone(ep)
		ep.Exec = s.sim
	}
	return ep, nil
}

// runCalls runs a reply's tool calls on ep into state s. Each is a real
// execution, unless the world model answered it without a real run (an
// execution avoided).
func (r *run) runCalls(ctx context.Context, s *node, ep *episode.Episode, calls []agent.Call) error {
	for _, call := range calls {
		// A call may run for real whatever its kind (a fallback, a
		// correction): the budget must hold one more before it starts.
		if r.sum.Execs >= r.o.BudgetExecs {
			return &errBudget{"real_executions"}
		}
		t0 := time.Now()
		obs, err := r.o.Protocol.Run(ctx, ep.Toolbox, call)
		if err != nil {
			return fmt.Errorf("run tool %s: %w", call.Tool, err)
		}
		r.count(obs.Sim)
		obs.Text = agent.TruncateText(obs.Text, r.l.MaxObservationTokens*4)
		st := trajectory.Step{Turn: s.turns, Tool: call.Tool, Action: call.Input, Observation: obs.Text, OK: obs.OK,
			FormatError: obs.Invalid, Seconds: time.Since(t0).Seconds(), Sim: obs.Sim}
		if call.Tool == "bash" && !obs.Invalid {
			code := obs.ExitCode
			st.ExitCode = &code
		}
		s.steps = append(s.steps, st)
		s.Observation = agent.TruncateText(obs.Text, observationExcerpt)
		if call.Tool == "submit" && obs.OK {
			p := obs.Patch
			s.submitted = &p
		}
		s.messages = append(s.messages, r.o.Protocol.Result(call, obs, agent.Budget{RemainingTurns: max(r.o.Depth-s.turns, 0), ContextTokens: r.l.ContextTokens}))
	}
	return nil
}

// evaluate scores c: the real reward of a submitted patch (one real
// execution), else the value model's estimate (one model call).
func (r *run) evaluate(ctx context.Context, c *node) error {
	if c.submitted != nil && r.o.Sim != nil && r.o.Sim.Reward != nil {
		return r.predictReward(ctx, c)
	}
	if c.submitted != nil {
		if err := r.spendExec(); err != nil {
			return err
		}
		res, err := reward.Grade(ctx, r.o.Sandboxes, r.env, r.task, *c.submitted)
		if err != nil {
			return fmt.Errorf("grade a submitted patch: %w", err)
		}
		r.sum.Gradings++
		v := 0.0
		if res.Resolved {
			v = 1
		}
		c.Reward, c.Value, c.resolved = &v, v, &res.Resolved
		return nil
	}
	if err := r.spendCall(); err != nil {
		return err
	}
	r.sum.ValueCalls++
	v, verr, err := r.value(ctx, c)
	if err != nil {
		return err
	}
	c.Value, c.ValueError = v, verr
	return nil
}
