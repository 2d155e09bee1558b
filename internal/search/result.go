package search

import (
	"time"

	"cwm/internal/sim"
	"cwm/internal/trajectory"
)

// result picks the best node (better) and writes its path as a
// trajectory in forage's schema, and the tree as Nodes.
func (r *run) result() *Result {
	best := r.nodes[0]
	for _, n := range r.nodes[1:] {
		if better(n, best) {
			best = n
		}
		if n.rollout != nil && better(n.rollout, best) {
			best = n.rollout
		}
	}
	bestID := best.ID
	if best.rolloutOf != nil {
		bestID = best.rolloutOf.ID
	}
	res := &Result{}
	for _, n := range r.nodes {
		res.Tree = append(res.Tree, n.Node)
	}
	tr := &trajectory.Trajectory{TaskID: r.task.InstanceID, Model: r.o.Policy.Model(), Protocol: r.o.Protocol.Name(),
		EnvID: r.task.EnvID, StartedAt: time.Now().UTC(), Messages: best.messages, Steps: best.steps,
		ModelCalls: best.calls, Patch: best.diff, SubmittedPatch: best.submitted, Turns: best.turns}
	if tr.Steps == nil {
		tr.Steps = []trajectory.Step{}
	}
	if tr.ModelCalls == nil {
		tr.ModelCalls = []trajectory.ModelCall{}
	}
	tr.ExitReason = trajectory.ExitMaxTurns
	if best.submitted != nil {
		tr.ExitReason = trajectory.ExitSubmitted
	}
	for _, c := range best.calls {
		tr.Tokens.Prompt += c.PromptTokens
		tr.Tokens.Completion += c.CompletionTokens
		tr.Cost += c.Cost
		tr.ModelSeconds += c.Seconds
	}
	if r.o.Sim != nil {
		tr.Sim = sim.Summarize(r.o.Sim.Summary(), tr.Steps)
		tr.Sim.Statement = r.task.ProblemStatement
	}
	switch {
	case best.RewardPredicted:
		// Not graded for real: the trajectory's reward stays null until
		// cwm reward fills it, as forage's --sim-reward leaves it.
		tr.Sim.PredictedReward = best.Reward
	case best.Reward != nil:
		tr.SetGrade(trajectory.Grade{Reward: best.Reward, Resolved: best.resolved})
	}
	r.sum.BestNode, r.sum.BestReward, r.sum.Nodes = bestID, best.Reward, len(r.nodes)
	res.Best = tr
	return res
}
