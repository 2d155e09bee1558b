package env

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"cwm/internal/lazyre"
	"cwm/internal/testrun"
)

// Source is where a repository comes from.
type Source struct {
	// Kind is "git" (a git repository, local or remote) or "dir" (a plain
	// directory, snapshotted into a one-commit repository).
	Kind string `json:"kind"`
	// Location is the absolute path or the URL.
	Location string `json:"location"`
}

// Step is one install or test command and where it came from.
type Step struct {
	// Command is the command as found (GitHub expressions substituted).
	Command string `json:"command"`
	// Provenance says where: "flag --install", ".github/workflows/ci.yml:
	// job test, step Install", "tox.ini [testenv] deps", "pyproject.toml".
	Provenance string `json:"provenance"`
	// Run is the command as cwm ran it, when it differs (pip made
	// offline, tooling upgrades dropped).
	Run string `json:"run,omitempty"`
	// Status is ok, failed, partial (ran without some requirements) or
	// skipped; Note says why when it is not ok.
	Status  string  `json:"status,omitempty"`
	Note    string  `json:"note,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
}

// TestResult is one test's baseline: its outcome in every run.
type TestResult struct {
	ID string `json:"id"`
	// Status is the outcome shared by every run (pass, fail, error,
	// skip), or flaky when the runs disagree (a test missing from a run
	// counts as disagreeing).
	Status string `json:"status"`
	// Outcomes has one entry per run; "absent" when the run did not
	// report the test.
	Outcomes []testrun.Outcome `json:"outcomes"`
	Seconds  []float64         `json:"seconds"`
	Message  string            `json:"message,omitempty"`
}

// Flaky is the status of a test whose runs disagree.
const Flaky = "flaky"

// Absent marks a run that did not report a test.
const Absent testrun.Outcome = "absent"

// RunRecord is how one baseline run ended.
type RunRecord struct {
	Seconds float64 `json:"seconds"`
	Exit    string  `json:"exit"`
	Reason  string  `json:"reason,omitempty"` // the limit that stopped it
	Note    string  `json:"note,omitempty"`
	Tests   int     `json:"tests"`
}

// Counts summarise a baseline by status.
type Counts struct {
	Tests int `json:"tests"`
	Pass  int `json:"pass"`
	Fail  int `json:"fail"`
	Error int `json:"error"`
	Skip  int `json:"skip"`
	Flaky int `json:"flaky"`
}

func (c Counts) String() string {
	return fmt.Sprintf("%d tests: %d pass, %d fail, %d error, %d skip, %d flaky", c.Tests, c.Pass, c.Fail, c.Error, c.Skip, c.Flaky)
}

// RunLimits bound each test run of an environment. Zero fields take the
// sandbox's defaults.
type RunLimits struct {
	Timeout time.Duration
	Memory  int64
	Pids    int64
	Output  int64
	Disk    int64 // what a run may write (the sandbox's upper layer)
}

type runLimitsJSON struct {
	TimeoutSeconds float64 `json:"timeout_seconds"`
	Memory         int64   `json:"memory_bytes,omitempty"`
	Pids           int64   `json:"pids,omitempty"`
	Output         int64   `json:"output_bytes,omitempty"`
	Disk           int64   `json:"disk_bytes,omitempty"`
}

// MarshalJSON writes the limits with their units in the names.
func (l RunLimits) MarshalJSON() ([]byte, error) {
	return json.Marshal(runLimitsJSON{l.Timeout.Seconds(), l.Memory, l.Pids, l.Output, l.Disk})
}

// String shows the limits, "default" for zero fields.
func (l RunLimits) String() string {
	size := func(n int64) string {
		switch {
		case n <= 0:
			return "default"
		case n%(1<<30) == 0:
			return fmt.Sprintf("%d GiB", n>>30)
		default:
			return fmt.Sprintf("%d MiB", n>>20)
		}
	}
	timeout, pids := "default", "default"
	if l.Timeout > 0 {
		timeout = l.Timeout.String()
	}
	if l.Pids > 0 {
		pids = fmt.Sprint(l.Pids)
	}
	return fmt.Sprintf("timeout %s, memory %s, disk %s, %s processes, output %s", timeout, size(l.Memory), size(l.Disk), pids, size(l.Output))
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (l *RunLimits) UnmarshalJSON(b []byte) error {
	var j runLimitsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*l = RunLimits{Timeout: time.Duration(j.TimeoutSeconds * float64(time.Second)), Memory: j.Memory, Pids: j.Pids, Output: j.Output, Disk: j.Disk}
	return nil
}

// Missing is a dependency the environment lacks.
type Missing struct {
	// Import is the module name code imports ("yaml").
	Import string `json:"import"`
	// Requirement is the requirement as declared ("PyYAML>=5"), when known.
	Requirement string `json:"requirement,omitempty"`
	// Installed is the version present when it does not satisfy the
	// requirement.
	Installed string `json:"installed,omitempty"`
	// Debian is the Debian package that provides it, when there is one.
	Debian string `json:"debian,omitempty"`
	// Source says who found it missing: pip, project metadata, build
	// backend, tests.
	Source string `json:"source"`
}

func (m Missing) String() string {
	var more []string
	if m.Requirement != "" && RequirementName(m.Requirement) != strings.ReplaceAll(strings.ToLower(m.Import), "_", "-") {
		more = append(more, m.Requirement)
	}
	if m.Installed != "" {
		more = append(more, "installed "+m.Installed+" does not satisfy it")
	}
	if m.Debian != "" {
		more = append(more, "Debian package "+m.Debian)
	}
	if len(more) == 0 {
		return m.Import
	}
	return m.Import + " (" + strings.Join(more, ", ") + ")"
}

var (
	reqName = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]*`)
	reqSeps = lazyre.New(`[-_.]+`)
)

// RequirementName is the distribution name of a requirement string,
// normalised (PEP 503): "PyYAML>=5" -> "pyyaml".
func RequirementName(req string) string {
	m := reqName().FindString(strings.TrimSpace(req))
	return strings.ToLower(reqSeps().ReplaceAllString(m, "-"))
}
