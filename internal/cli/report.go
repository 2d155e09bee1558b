package cli

import (
	"context"
	"flag"
	"fmt"

	"cwm/internal/command"
	"cwm/internal/report"
)

type reportCmd struct {
	out, title string
	json       bool
}

func (*reportCmd) Name() string { return "report" }
func (*reportCmd) Synopsis() string {
	return "make one static HTML page from eval, trace, tasks, trajectory, reward and select files"
}
func (*reportCmd) Usage() string {
	return `[--out REPORT.html] [--json] FILE|DIR...
Reads each FILE, tells its kind from its first line (the output of cwm eval
cruxeval, eval halt, eval fidelity, trace func or trace repo, tasks, forage
trajectories, reward's scored trajectories or cwm select's predictions) and
writes one HTML page that needs no network: CruxEval pass@1 per mode with
95% confidence intervals and per-problem tables, the halting confusion
matrix with precision and recall, trace fidelity by tenth of the trace and
by value kind, reward and turn distributions with per-task tables, cwm
select's curves over k (pass@k, majority@k, best@k, hybrid) with each
task's pick, why it won and the candidates' scores, and viewers that step
through a trace (its locals at each frame) or a trajectory (message by
message).
Plots are inline SVG; the viewers' data is embedded (at most 50 traces of
2000 frames and 50 trajectories). See docs/eval.md.

A DIR is a cwm search output directory (its summary.json, tree.jsonl and
trajectories.jsonl): its numbers per task and in total (tree size,
depth, model calls, value calls, real executions, executions avoided by
the sim backend, gradings, resolved) are printed as a table, or as JSON
with --json, and make the page's Search section. --out may be left out
when every argument is such a directory. See docs/sim.md.

Examples:
  cwm report --out report.html direct.jsonl trace-full.jsonl halt.jsonl fidelity.jsonl traces.jsonl
  cwm report --title "forage, week 3" --out forage.html scored.jsonl tasks.jsonl
  cwm report --title "best@16" --out select.html pred.jsonl
  cwm report --json search-out/`
}

func (c *reportCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.out, "out", "", "the HTML `file` to write")
	fs.StringVar(&c.title, "title", "cwm report", "the page's title")
	fs.BoolVar(&c.json, "json", false, "print the search directories' numbers as JSON")
}

func (c *reportCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) == 0 {
		return command.Usagef("at least one file or search directory is required")
	}
	if c.out == "" {
		for _, a := range args {
			if !report.IsSearchDir(a) {
				return command.Usagef("--out is required: %s is not a cwm search output directory", a)
			}
		}
	}
	r, err := report.Build(c.title, args)
	if err != nil {
		return err
	}
	if c.json {
		secs := r.Search
		if secs == nil {
			secs = []*report.SearchSection{}
		}
		if err := writeJSON(e.Stdout, secs); err != nil {
			return err
		}
	} else {
		for _, s := range r.Search {
			if err := s.Write(e.Stdout); err != nil {
				return err
			}
		}
	}
	if c.out == "" {
		return nil
	}
	if err := report.WriteFile(c.out, r); err != nil {
		return err
	}
	fmt.Fprintf(e.Stderr, "cwm report: wrote %s from %d files\n", c.out, len(args))
	return nil
}
