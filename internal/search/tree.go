package search

import (
	"slices"

	"cwm/internal/episode"
	"cwm/internal/model"
	"cwm/internal/sim"
	"cwm/internal/trajectory"
)

// Node is one state of the search tree as the tree file records it.
type Node struct {
	TaskID string `json:"task_id"`
	ID     int    `json:"id"`
	// Parent is the parent's ID, -1 for the root.
	Parent int `json:"parent"`
	Depth  int `json:"depth"`
	// Seed is the sampling seed of the policy reply that made the node.
	Seed int64 `json:"seed"`
	// Action is the policy's reply (its text, or its tool calls).
	Action string `json:"action"`
	// Observation is the start of the last tool result (observationExcerpt).
	Observation string `json:"observation"`
	// Value is the node's score: the value model's estimate, the real
	// reward of a submitted node, or (MCTS) the mean of what was
	// backpropagated through it.
	Value  float64 `json:"value"`
	Visits int     `json:"visits"`
	// Reward is the real reward of the submitted patch (or the reward
	// model's, RewardPredicted); nil when nothing was submitted.
	Reward *float64 `json:"reward"`
	// RewardPredicted is set when Reward is the reward model's
	// (--sim-reward), not a real grading's.
	RewardPredicted bool `json:"reward_predicted,omitempty"`
	// Rollout is how many replies the policy played on from this node to
	// evaluate it (MCTS --rollout); RolloutReward the reward of the patch
	// the rollout submitted (nil: it submitted none, and Value is the
	// value model's estimate of where it ended).
	Rollout       int      `json:"rollout,omitempty"`
	RolloutReward *float64 `json:"rollout_reward,omitempty"`
	// ValueError says why the value model's reply gave no number (the
	// value is then 0).
	ValueError string `json:"value_error,omitempty"`
}

// observationExcerpt bounds the observation kept in the tree file: the
// tree is for looking at the search, the best trajectory holds it whole.
const observationExcerpt = 400

// node is a Node with the state the search needs to go on from it.
type node struct {
	Node
	parent   *node
	children []*node
	// messages is the conversation up to this state; steps its tool runs.
	messages []model.Message
	steps    []trajectory.Step
	calls    []trajectory.ModelCall
	diff     string
	// submitted is the patch the submit tool took (terminal node).
	submitted *string
	resolved  *bool
	ckpt      *episode.Checkpoint
	// sharedCkpt is set when ckpt is the parent's (a reply that ran
	// nothing), which the parent releases.
	sharedCkpt bool
	total      float64 // MCTS: sum of the values backpropagated
	exhausted  bool    // MCTS: nothing left to expand below
	// turns counts the policy's replies on the path to this state.
	turns int
	// sim is the sim backend's history at this state (nil: real backend).
	sim *sim.Backend
	// rollout is the end of the rollout that evaluated this node when it
	// submitted a patch (a candidate for the search's answer); rolloutOf
	// is, on such an end, the node it evaluated.
	rollout, rolloutOf *node
}

// child is a new state after n, to be filled by the reply of seed seed:
// n's conversation, steps and calls copied, nothing shared that the
// child appends to.
func (n *node) child(seed int64) *node {
	return &node{Node: Node{Seed: seed}, diff: n.diff, turns: n.turns, sim: n.sim,
		messages: slices.Clone(n.messages), steps: slices.Clone(n.steps), calls: slices.Clone(n.calls)}
}

// terminal reports whether the node cannot be expanded: it submitted, or
// stands at the depth limit.
func (n *node) terminal(depth int) bool { return n.submitted != nil || n.Depth >= depth }

// tier ranks nodes for the best trajectory before their values: a patch
// the verifier resolved, then states not yet graded, then patches it
// rejected (known wrong, whatever the value model thought).
func (n *node) tier() int {
	switch {
	case n.Reward == nil:
		return 1
	case *n.Reward > 0:
		return 2
	}
	return 0
}

// better reports whether a ranks above b as the search's answer.
func better(a, b *node) bool {
	if ta, tb := a.tier(), b.tier(); ta != tb {
		return ta > tb
	}
	if a.Value != b.Value {
		return a.Value > b.Value
	}
	return a.ID < b.ID
}
