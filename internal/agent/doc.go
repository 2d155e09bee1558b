// Package agent runs coding agents against an OpenAI-compatible model
// endpoint in cwm sandboxes and records what they did as trajectories.
//
// An episode starts a sandbox over a task's environment, plants the task's
// bug so that git cannot reveal it (CWM-SPEC 2.2), and then alternates
// model calls and tool runs until the agent submits or a limit ends it. Two
// tool protocols exist, chosen per run: CWM's own text protocol
// (`<tool: bash>` blocks, exactly as Meta's released SWE-RL environment
// speaks it, so trajectories are usable as CWM training data) and native
// OpenAI function calling (for models trained on it). Both drive the same
// tools: a persistent bash session, edit, create, submit and, for function
// calling, view.
//
// A trajectory is one JSON object: the messages in OpenAI chat format (ready
// for supervised fine-tuning), the steps with timings, the exit reason, the
// final diff and the submitted patch, token counts and cost. Reward fields
// stay empty until a Grader fills them; grading needs fresh sandboxes and
// the task's hidden tests, so it is a separate stage that plugs in here.
package agent
