package envbuild

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"cwm/internal/env"
	"cwm/internal/testrun"
)

// runSuite runs e's test command once in a fresh sandbox on e and
// reports it. A suite that deletes /repo is noted: it did so only in its
// own sandbox.
func runSuite(ctx context.Context, sbs *env.Sandboxes, e *env.Env, opts testrun.Options, log io.Writer) (*testrun.Report, error) {
	s, err := sbs.Open(ctx, e)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	rep, err := testrun.Run(ctx, s, e.TestCommand, opts)
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
func mergeRuns(reps []*testrun.Report) ([]env.TestResult, []env.RunRecord, env.Counts) {
	n := len(reps)
	byID := map[string]*env.TestResult{}
	var order []string
	records := make([]env.RunRecord, n)
	for i, rep := range reps {
		res := rep.Result
		records[i] = env.RunRecord{Seconds: roundSeconds(res.Duration), Exit: res.Describe(),
			Reason: string(res.Reason), Note: rep.Note, Tests: len(rep.Tests)}
		for _, t := range rep.Tests {
			tr := byID[t.ID]
			if tr == nil {
				tr = &env.TestResult{ID: t.ID, Outcomes: make([]testrun.Outcome, n), Seconds: make([]float64, n)}
				for j := range tr.Outcomes {
					tr.Outcomes[j] = env.Absent
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
	var out []env.TestResult
	var c env.Counts
	for _, id := range order {
		tr := byID[id]
		tr.Status = string(tr.Outcomes[0])
		for _, o := range tr.Outcomes[1:] {
			if o != tr.Outcomes[0] {
				tr.Status = env.Flaky
			}
		}
		if tr.Status == string(env.Absent) {
			tr.Status = env.Flaky
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
func unusableReason(c env.Counts, runs []env.RunRecord, install []env.Step, missing []env.Missing) string {
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
		switch {
		case s.Status == "failed":
			why += "; install step failed: " + s.Command
			if s.Note != "" {
				why += " (" + s.Note + ")"
			}
		case s.Status == "partial" && strings.Contains(s.Note, "egress "):
			// What pip could not find because the relay refused or could
			// not reach a host: the missing names alone would hide that.
			why += "; install step partly failed: " + s.Command + " (" + s.Note + ")"
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
