package task

// Imported is how a task brought in from a published dataset (SWE-bench,
// SWE-Gym, R2E-Gym, SWE-smith, SWE-rebench V2) runs and is graded: on the
// dataset's own image, stored as a cwm base, with the dataset's test
// command and log parser, so that its tests mean what they mean to the
// dataset's harness. cwm tasks import writes it; docs/tasks.md
// ("Importing the field's datasets") has the table of each dataset's
// values.
type Imported struct {
	// Format is the dataset's format name (swebench, r2e-gym, ...).
	Format string `json:"format"`
	// Image is the reference the image was pulled by (the row's name, on
	// the mirror when one was given); Base is the digest of its manifest,
	// the cwm base it was stored as.
	Image string `json:"image"`
	Base  string `json:"base"`
	// Workdir is where the repository is in the image, at BaseCommit.
	Workdir string `json:"workdir"`
	// Path lists directories put first on PATH (a conda env, a venv).
	Path []string `json:"path,omitempty"`
	// TestCommand is run by bash in Workdir once the patches are applied;
	// its output between the markers goes to LogParser (a name of
	// internal/logparse).
	TestCommand string `json:"test_command"`
	LogParser   string `json:"log_parser"`
	// OwnScript says TestCommand is the row's own eval script (SWE-bench's
	// current harness), which restores the test files, applies the test
	// patch and prints the markers itself.
	OwnScript bool `json:"own_script,omitempty"`
	// TestFiles are the files TestPatch touches: restored at BaseCommit
	// before TestPatch is applied again, so that a candidate that edited
	// the tests is graded on the dataset's tests.
	TestFiles []string `json:"test_files,omitempty"`
	// HiddenTests is a directory of the image holding tests kept out of
	// the agent's view (R2E-Gym's /r2e_tests), copied into Workdir only
	// for grading.
	HiddenTests string `json:"hidden_tests,omitempty"`
	// Expected is each test's status with the gold patch as the dataset
	// gives it (R2E-Gym's expected_output_json), when it gives one.
	Expected map[string]string `json:"expected,omitempty"`
	// Env holds variables the tests run with (NAME=value): Harbor's
	// [verifier].env.
	Env []string `json:"env,omitempty"`
}
