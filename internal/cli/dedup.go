package cli

import (
	"context"
	"flag"

	"cwm/internal/command"
	"cwm/internal/dedup"
)

type dedupCmd struct {
	in, out, dropped string
	threshold        float64
	groupBy          string
	json             bool
}

func (*dedupCmd) Name() string { return "dedup" }
func (*dedupCmd) Synopsis() string {
	return "remove near-duplicate trajectories per repository (MinHash LSH)"
}
func (*dedupCmd) Usage() string {
	return `--in TRAJ.jsonl --out KEPT.jsonl [flags]
Removes near-duplicate trajectories as CWM's ForagerAgent data was
(CWM-SPEC 3): per repository, over the concatenated actions, so that every
pair of kept trajectories has a Jaccard similarity below --threshold.

A trajectory's text is its steps' actions (steps[].action), or its
assistant messages when it has no steps, joined by newlines; similarity is
the Jaccard similarity of the sets of 5-word shingles. Lines are taken in
input order and a line is dropped when it is at least --threshold similar
to a kept line of its group; MinHash LSH proposes the candidates and the
exact Jaccard similarity decides. The group is the line's --group-by field
("repo" by default), or else the repository its task id names
("owner__name-123" is owner/name, otherwise the id up to its last "-").

Kept lines are written to --out unchanged and in input order; each dropped
one is reported (to --dropped as JSONL, with --json, or the first few on
stdout) with the line it duplicates and their Jaccard similarity. The
result is deterministic. See docs/rewards.md.`
}

func (c *dedupCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.in, "in", "", "trajectories `file` (JSONL)")
	fs.StringVar(&c.out, "out", "", "`file` to write the kept lines to (replaced)")
	fs.StringVar(&c.dropped, "dropped", "", "`file` to write a JSONL record of each dropped line to (replaced)")
	fs.Float64Var(&c.threshold, "threshold", 0.5, "Jaccard similarity at which a line is a duplicate")
	fs.StringVar(&c.groupBy, "group-by", "repo", "`field` whose value groups lines (else the task id's repository)")
	fs.BoolVar(&c.json, "json", false, "print the report as JSON")
}

func (c *dedupCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	if c.in == "" || c.out == "" {
		return command.Usagef("--in and --out are required")
	}
	if !(c.threshold > 0 && c.threshold <= 1) {
		return command.Usagef("--threshold %v is not in (0, 1]", c.threshold)
	}
	rep, err := dedup.File(ctx, dedup.FileOptions{In: c.in, Out: c.out, Dropped: c.dropped,
		Threshold: c.threshold, GroupBy: c.groupBy})
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(e.Stdout, rep)
	}
	return rep.Write(e.Stdout)
}
