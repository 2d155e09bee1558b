// Package sim is the simulated backend of swe episodes: a world model
// (any OpenAI-compatible endpoint) answers the bash commands that execute
// code, given a bounded context that never holds the gold patch or the
// hidden tests, while file actions and reading commands run for real on
// the episode's overlay. It holds the classifier of commands, the
// context and its rendering (one function for the backend and for cwm
// export's transitions), the world-model client with its bounded,
// counted attempts, the correction by real runs, the reward model, and
// the fidelity measures of cwm eval sim. See docs/sim.md.
package sim
