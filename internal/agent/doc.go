// Package agent runs coding agents: a model (cwm/internal/model) acting on
// an episode (cwm/internal/episode) through a tool protocol, until it
// submits or a limit ends it, recorded as a trajectory
// (cwm/internal/trajectory). Forage is the stage that runs it over tasks
// and samples (cwm forage).
//
// Two tool protocols exist, chosen per run: CWM's own text protocol
// (`<tool: bash>` blocks, exactly as Meta's released SWE-RL environment
// speaks it, so trajectories are usable as CWM training data) and native
// OpenAI function calling (for models trained on it). Both drive the same
// tools: a persistent bash session, edit, create, submit and, for function
// calling, view. The loop is the same for both: ask the model, run its
// call, report the result back with what the episode has left.
//
// Reward fields stay empty unless the run grades its episodes (the task's
// hidden tests in fresh sandboxes, cwm/internal/reward), or cwm reward
// grades the trajectories later.
package agent
