// Package search runs beam search and MCTS over checkpointed episodes
// (cwm search): each state of the tree is an episode's checkpoint, a child
// is made by branching from its parent's checkpoint and running one reply
// of the policy (for real, or on the sim backend, where a world model
// answers the commands that execute code), and states are scored by a
// value model, by a rollout of the policy (MCTS), or, once a patch is
// submitted, by the real verifier (reward.Grade) or a reward model. It exists
// beside forage because forage runs one line of replies to its end, while
// search needs to try several replies from the same state without paying
// for the steps before it again.
package search
