// Package envserver is cwm serve: cwm's environments as an RL
// environment server that trainers already speak, OpenEnv's wire protocol
// (WebSocket /ws with reset, step, state and close; /health, /schema,
// /metadata, the Task API) with cwm's extensions: a clone message that
// branches an episode, checkpoints to roll back to and branch from
// (checkpoints.go), and a REST API for clients without WebSockets; and
// NeMo Gym's resources-server API (nemogym.go), for its agents.
//
// An episode is of one of three kinds: swe (a task's sandbox and the SWE
// tools through a tool protocol, a submitted patch graded as cwm reward
// grades it), trace (predicting the next frame of a CWM trace, teacher
// forced and rewarded frame by frame) and shell (a bare sandbox on an
// environment with the SWE tools). Every episode is owned: it closes when
// its client says so, when its WebSocket drops, when it is idle past the
// idle timeout, or when the server stops; the server drains on its
// context's cancellation. Errors map to HTTP statuses and OpenEnv's error
// codes in one place (status.go).
package envserver
