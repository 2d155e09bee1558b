package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"cwm/internal/batch"
	"cwm/internal/command"
	"cwm/internal/errkind"
)

type mergeCmd struct {
	out     string
	stage   string
	inputs  command.StringList
	shards  int
	partial bool
	force   bool
	json    bool
}

func (*mergeCmd) Name() string     { return "merge" }
func (*mergeCmd) Synopsis() string { return "join the outputs of a batch stage's shards, checked" }
func (*mergeCmd) Usage() string {
	return `--out ALL.jsonl [flags] SHARD.jsonl...
Joins the outputs of the shards of one batch stage run (--shard i/n, a
Slurm array, a Kubernetes Indexed Job) into ALL.jsonl, in shard order,
after checking them:

  - no key is on two lines (a trace's id, a task's instance_id, a
    trajectory's task and sample);
  - every line is in the file of its shard (the split is a hash of the
    item's key: a line elsewhere was written by a run with another n);
  - every shard from 0 to n-1 is there and its run finished: a sharded run
    writes SHARD.jsonl.shard.json when it ends, which names the stage, the
    shard, and the input;
  - for stages that write a line per item (trace func, forage, tasks
    validate), no item of the input is missing.

When a check fails nothing is written; the shards to run again are listed
with why (a shard's run resumes from its output: run the same command with
the same --shard). --partial writes what there is all the same, except
duplicates and misplaced lines. Files written beside a shard's output
(tasks' .decisions.jsonl) are merged beside ALL.jsonl.

The stage, n and the input come from the markers; --stage, --shards and
--input give them when the markers are missing or the input has moved.
Exits 1 when a check fails. See docs/scale.md.`
}

func (c *mergeCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.out, "out", "", "merged output `FILE` (must not exist, unless --force)")
	fs.StringVar(&c.stage, "stage", "", "`NAME` of the stage that wrote the shards (default: from their markers): "+stageNames())
	fs.Var(&c.inputs, "input", "the stage's input `FILE` (repeatable; default: from the markers)")
	fs.IntVar(&c.shards, "shards", 0, "`N` shards the run had (default: from the markers, else the number of files)")
	fs.BoolVar(&c.partial, "partial", false, "write the output even when shards are missing or unfinished")
	fs.BoolVar(&c.force, "force", false, "replace --out if it exists")
	fs.BoolVar(&c.json, "json", false, "print the report as JSON")
}

func (c *mergeCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	switch {
	case c.out == "":
		return command.Usagef("--out is required")
	case len(args) == 0:
		return command.Usagef("give the shards' output files")
	case c.shards < 0:
		return command.Usagef("--shards must be positive")
	}
	if _, err := os.Stat(c.out); err == nil && !c.force {
		return errkind.Errorf(errkind.Input, "%s exists: remove it or pass --force", c.out)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	stageName, marker, err := c.readMarkers(args)
	if err != nil {
		return err
	}
	st := findStage(stageName)
	spec := st.MergeSpec(args, c.out)
	spec.Count, spec.Partial = c.shards, c.partial
	inputs := []string(c.inputs)
	var params map[string]string
	if marker != nil {
		params = marker.Params
		if len(inputs) == 0 {
			inputs = marker.Inputs
		}
	}
	if st.Expected != nil && len(inputs) > 0 {
		if spec.Expected, err = st.Expected(inputs, params); err != nil {
			return fmt.Errorf("the input's items: %w (give it with --input)", err)
		}
	}
	rep, err := batch.Merge(spec)
	if err != nil {
		return err
	}
	if c.json {
		if err := writeJSON(e.Stdout, rep); err != nil {
			return err
		}
	} else {
		writeMergeReport(e, stageName, rep, c.out)
	}
	if !rep.OK() {
		return command.ExitStatus(1)
	}
	return nil
}

// readMarkers finds the stage from --stage or the shards' markers, and
// returns the first marker (for the input and parameters).
func (c *mergeCmd) readMarkers(files []string) (string, *batch.Marker, error) {
	stage := c.stage
	var first *batch.Marker
	for _, f := range files {
		m, err := batch.ReadMarker(f)
		if err != nil {
			return "", nil, errkind.Wrap(errkind.Input, err)
		}
		if m == nil {
			continue
		}
		if first == nil {
			first = m
		}
		if stage == "" {
			stage = m.Stage
		}
		if m.Stage != stage {
			return "", nil, errkind.Errorf(errkind.Input, "%s is an output of cwm %s, not of cwm %s", f, m.Stage, stage)
		}
	}
	if stage == "" {
		return "", nil, command.Usagef("no shard has a marker (%s) to say which stage wrote it: give --stage", batch.MarkerPath(files[0]))
	}
	if findStage(stage) == nil {
		return "", nil, command.Usagef("--stage %q: not a batch stage (%s)", stage, stageNames())
	}
	return stage, first, nil
}

// writeMergeReport prints what merge found: per shard, its file and lines;
// then the problems and the shards to run again.
func writeMergeReport(e *command.Env, stage string, rep *batch.MergeReport, out string) {
	w := e.Stdout
	fmt.Fprintf(w, "cwm %s, %d shards:\n", stage, rep.Count)
	for _, f := range rep.Files {
		state := "finished"
		switch {
		case f.Torn:
			state = "last line cut off"
		case !f.Finished:
			state = "not finished"
		}
		name := f.Shard
		if name == "" {
			name = "?"
		}
		fmt.Fprintf(w, "  %-7s %6d lines  %-17s %s\n", name, f.Lines, state, f.File)
	}
	for _, d := range rep.Duplicates {
		fmt.Fprintf(w, "duplicate key %q: %s\n", printable(d.Key), strings.Join(d.Lines, ", "))
	}
	for _, m := range rep.Misplaced {
		fmt.Fprintf(w, "misplaced: %s (key %q) belongs to shard %s\n", m.Line, printable(m.Key), m.Belongs)
	}
	for _, r := range rep.Rerun {
		if r.Shard == "" {
			fmt.Fprintf(w, "unknown shard: %s: %s\n", r.File, r.Reason)
			continue
		}
		fmt.Fprintf(w, "re-run shard %s: %s\n", r.Shard, r.Reason)
		if len(r.Missing) > 0 {
			shown := r.Missing
			if len(shown) > 5 {
				shown = shown[:5]
			}
			var qs []string
			for _, k := range shown {
				qs = append(qs, fmt.Sprintf("%q", printable(k)))
			}
			more := ""
			if len(r.Missing) > len(shown) {
				more = fmt.Sprintf(" and %d more", len(r.Missing)-len(shown))
			}
			fmt.Fprintf(w, "  missing: %s%s\n", strings.Join(qs, ", "), more)
		}
	}
	if len(rep.Rerun) > 0 {
		fmt.Fprintf(w, "(run cwm %s again with the same flags and --shard i/n: it resumes from the shard's output)\n", stage)
	}
	switch {
	case rep.Written:
		fmt.Fprintf(w, "wrote %d lines to %s\n", rep.Lines, out)
	default:
		fmt.Fprintf(w, "nothing written to %s\n", out)
	}
}

// printable shows a key's NUL separators (task and sample, file and
// function) as " ".
func printable(k string) string { return strings.ReplaceAll(k, "\x00", " ") }
