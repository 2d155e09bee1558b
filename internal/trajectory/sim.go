package trajectory

// Sim is the record of a bash step that the sim backend handled, or that
// the real backend ran with its context recorded (cwm forage
// --record-context): what a world model was (or would have been) asked,
// what it predicted, what the real sandbox printed, and which of the two
// the agent saw. Its fields are the pair that cwm eval sim measures and
// the transition that cwm export transitions writes. See
// docs/sim.md.
type Sim struct {
	// Kind is the classifier's kind of the command: test, python, build
	// or run (sim.Classify).
	Kind string `json:"kind"`
	// Context is what the world model was sent, before rendering
	// (sim.Messages renders it); absent when the step could not build one.
	Context *SimContext `json:"context,omitempty"`
	// Predicted is the world model's answer; nil when none was valid.
	Predicted *Execution `json:"predicted,omitempty"`
	// Real is the sandbox's answer; nil when the command was not run.
	Real *Execution `json:"real,omitempty"`
	// Observed says which of the two the agent was shown: "sim" or "real".
	Observed string `json:"observed"`
	// Fallback, when set, is why the step ran for real instead: the cause
	// of the last failed attempt (invalid_json, oversized, timeout,
	// model_error, missing_file).
	Fallback string `json:"fallback,omitempty"`
	// Failures counts the failed world-model attempts by cause.
	Failures map[string]int `json:"failures,omitempty"`
	// Diverged is set when both ran and their exit codes or normalised
	// outputs differ (sim.Diverged).
	Diverged bool `json:"diverged,omitempty"`
	// ModelSeconds is the time spent waiting for the world model,
	// OverheadSeconds cwm's own share of the step (building the context,
	// checking the reply), RealSeconds the real run's.
	ModelSeconds    float64 `json:"model_seconds"`
	OverheadSeconds float64 `json:"overhead_seconds"`
	RealSeconds     float64 `json:"real_seconds"`
}

// Execution is what running a command printed and returned. The bash
// session merges the command's streams, so a real run's Stdout holds both
// and its Stderr is empty.
type Execution struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exit_code"`
}

// SimContext is the bounded context a world model is given for one
// command. It never holds the task's gold patch or hidden tests.
type SimContext struct {
	// Statement is the task's problem statement.
	Statement string `json:"statement"`
	// Diff is the repository's change since the task's base commit.
	Diff string `json:"diff"`
	// Cwd is the session's directory when the command ran.
	Cwd string `json:"cwd"`
	// Files are the sources of the files the command executes.
	Files []SimFile `json:"files"`
	// Recent are the last bash commands of the episode and what the agent
	// saw of them, oldest first.
	Recent []SimObservation `json:"recent"`
	// Command is the command to predict.
	Command string `json:"command"`
	// Truncated lists the parts that were cut to their bound.
	Truncated []string `json:"truncated,omitempty"`
}

// SimFile is one executed file's source.
type SimFile struct {
	Path   string `json:"path"`
	Source string `json:"source"`
}

// SimObservation is one earlier command and its output.
type SimObservation struct {
	Command  string `json:"command"`
	Output   string `json:"output"`
	ExitCode int    `json:"exit_code"`
}

// SimSummary is an episode's sim backend settings and totals.
type SimSummary struct {
	// Backend is "sim", or "real" for a real episode whose contexts were
	// recorded.
	Backend string `json:"backend"`
	// Statement is the task's problem statement, which the reward model
	// is given (and cwm export's reward rows).
	Statement string `json:"statement,omitempty"`
	SimModel  string `json:"sim_model,omitempty"`
	RealEvery int    `json:"real_every,omitempty"`
	Observe   string `json:"observe,omitempty"`
	// Simulated counts the commands the world model answered for the
	// agent; RealRuns the classified commands that ran for real
	// (corrections, fallbacks, or all of them on the real backend);
	// Fallbacks the ones that ran for real because no valid reply came;
	// Divergences the pairs that disagreed.
	Simulated   int            `json:"simulated"`
	RealRuns    int            `json:"real_runs"`
	Fallbacks   int            `json:"fallbacks"`
	Failures    map[string]int `json:"failures,omitempty"`
	Divergences int            `json:"divergences"`
	// PredictedReward is the reward model's reward (--sim-reward): the
	// episode was not graded for real, and Reward stays null until a real
	// grading (cwm reward) fills it.
	PredictedReward *float64 `json:"predicted_reward,omitempty"`
	RewardError     string   `json:"reward_error,omitempty"`
}
