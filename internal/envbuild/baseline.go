package envbuild

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"cwm/internal/sandbox"
	"cwm/internal/testrun"
)

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

// UnmarshalJSON reads what MarshalJSON wrote.
func (l *RunLimits) UnmarshalJSON(b []byte) error {
	var j runLimitsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*l = RunLimits{Timeout: time.Duration(j.TimeoutSeconds * float64(time.Second)), Memory: j.Memory, Pids: j.Pids, Output: j.Output, Disk: j.Disk}
	return nil
}

// runSuite runs the test command once in a fresh sandbox on the
// environment and reports it. A suite that deletes /repo is noted: it did
// so only in its own sandbox.
func runSuite(ctx context.Context, rt *sandbox.Runtime, cfg sandbox.Config, cmd testrun.Command, opts testrun.Options, log io.Writer) (*testrun.Report, error) {
	s, err := rt.New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("start sandbox: %w", err)
	}
	defer s.Close()
	rep, err := testrun.Run(ctx, s, cmd, opts)
	if err != nil {
		return nil, err
	}
	if log != nil {
		fmt.Fprintf(log, "\n$ %s\n", strings.Join(rep.Argv, " "))
		log.Write(rep.Result.Stdout)
		log.Write(rep.Result.Stderr)
		fmt.Fprintf(log, "[%s, %v, %d tests]\n", rep.Result.Describe(), rep.Result.Duration.Round(time.Millisecond), len(rep.Tests))
	}
	if _, err := s.Stat(ctx, "/repo"); err != nil {
		if rep.Note != "" {
			rep.Note += "; "
		}
		rep.Note += "the suite deleted /repo (in its own sandbox only)"
	}
	return rep, nil
}

// mergeRuns builds the baseline from the reports of every run.
func mergeRuns(reps []*testrun.Report) ([]TestResult, []RunRecord, Counts) {
	n := len(reps)
	byID := map[string]*TestResult{}
	var order []string
	records := make([]RunRecord, n)
	for i, rep := range reps {
		res := rep.Result
		records[i] = RunRecord{Seconds: roundSeconds(res.Duration), Exit: res.Describe(),
			Reason: string(res.Reason), Note: rep.Note, Tests: len(rep.Tests)}
		for _, t := range rep.Tests {
			tr := byID[t.ID]
			if tr == nil {
				tr = &TestResult{ID: t.ID, Outcomes: make([]testrun.Outcome, n), Seconds: make([]float64, n)}
				for j := range tr.Outcomes {
					tr.Outcomes[j] = Absent
				}
				byID[t.ID] = tr
				order = append(order, t.ID)
			}
			tr.Outcomes[i] = t.Outcome
			tr.Seconds[i] = roundSeconds(t.Time)
			if t.Message != "" && tr.Message == "" {
				tr.Message = t.Message
			}
		}
	}
	sort.Strings(order)
	var out []TestResult
	var c Counts
	for _, id := range order {
		tr := byID[id]
		tr.Status = string(tr.Outcomes[0])
		for _, o := range tr.Outcomes[1:] {
			if o != tr.Outcomes[0] {
				tr.Status = Flaky
			}
		}
		if tr.Status == string(Absent) {
			tr.Status = Flaky
		}
		c.Tests++
		switch tr.Status {
		case string(testrun.Pass):
			c.Pass++
		case string(testrun.Fail):
			c.Fail++
		case string(testrun.Error):
			c.Error++
		case string(testrun.Skip):
			c.Skip++
		default:
			c.Flaky++
		}
		out = append(out, *tr)
	}
	return out, records, c
}

// unusableReason explains why no test passes in every run, or is "" when
// at least one does.
func unusableReason(c Counts, runs []RunRecord, install []Step, missing []Missing) string {
	if c.Pass > 0 {
		return ""
	}
	var why string
	if c.Tests == 0 {
		var notes []string
		for i, r := range runs {
			n := r.Exit
			if r.Note != "" {
				n = r.Note
			}
			notes = append(notes, fmt.Sprintf("run %d: %s", i+1, n))
		}
		why = "no test ran (" + strings.Join(dedupe(notes), "; ") + ")"
	} else {
		why = "no test passes in every run (" + c.String() + ")"
	}
	for i, r := range runs {
		if r.Reason != "" && c.Tests > 0 {
			why += fmt.Sprintf("; run %d was stopped by the %s limit", i+1, r.Reason)
		}
	}
	for _, s := range install {
		if s.Status == "failed" {
			why += "; install step failed: " + s.Command
			if s.Note != "" {
				why += " (" + s.Note + ")"
			}
		}
	}
	if len(missing) > 0 {
		var names []string
		for _, m := range missing {
			names = append(names, m.String())
		}
		why += "; missing dependencies: " + strings.Join(names, ", ")
	}
	return why
}

// dedupe drops repeated notes that differ only in their run number.
func dedupe(notes []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range notes {
		_, rest, _ := strings.Cut(n, ": ")
		if seen[rest] {
			continue
		}
		seen[rest] = true
		out = append(out, n)
	}
	return out
}
