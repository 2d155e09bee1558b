// Package export turns cwm's outputs into the records a training job
// reads, in JSONL or Parquet with a Hugging Face dataset card beside them:
// trajectories as chats with a loss weight per message (sft), traces as
// CWM's token text (pretrain), and trajectories cut into (state, action,
// observation) triplets (triplets). Near-duplicates are removed with
// internal/dedup and excluded repositories with the decontamination of
// tasks (the caller passes its check), and rows can be split by
// repository so that no repository is in both train and eval.
//
// An export streams: rows go to the writer as their line is read, and a
// Parquet file is written a row group at a time, so memory is bounded
// whatever the input's size; only --dedup holds the text of every record
// (the shingle sets it compares), in a first pass over the input.
package export

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"cwm/internal/dedup"
	"cwm/internal/errkind"
	"cwm/internal/jsonl"
)

// Kind is what an export makes.
type Kind string

const (
	SFT      Kind = "sft"
	Pretrain Kind = "pretrain"
	Triplets Kind = "triplets"
	// Transitions are a world model's and a reward model's training rows
	// (docs/sim.md).
	Transitions Kind = "transitions"
)

// Options configure Run.
type Options struct {
	Kind Kind
	// In are the input files: trajectories for sft and triplets, traces
	// for pretrain.
	In []string
	// Out is the output file; with EvalShare, the directory that gets
	// train.EXT and eval.EXT. The dataset card, README.md, goes in the
	// directory of the output.
	Out string
	// Format is the output's format; "" takes Out's extension.
	Format Format
	// Mask and Seed are sft's masking policy and its seed (Seed also
	// seeds the split).
	Mask Mask
	Seed uint64
	// StateBytes bounds a triplet's state (0: DefaultStateBytes; <0:
	// unbounded).
	StateBytes int
	// Dedup, when above 0, removes near-duplicates: records of a
	// repository whose Jaccard similarity with a kept one is at least
	// Dedup (internal/dedup).
	Dedup float64
	// Exclude, when set, is the decontamination check of a repository: an
	// error (its message the reason) leaves out every record of it.
	Exclude func(repo string) error
	// EvalShare, when above 0, splits by repository: that share of the
	// repositories (chosen by a hash of Seed and the repository's name) go
	// to eval, the rest to train.
	EvalShare float64
	// Card is what the dataset card says of how the files were made.
	Card CardInfo
}

// Summary is what Run did.
type Summary struct {
	Kind Kind `json:"kind"`
	// Records counts the input lines; Skipped the ones that give no row,
	// by reason (an incomplete trace, a trajectory without messages).
	Records int            `json:"records"`
	Skipped map[string]int `json:"skipped"`
	// Duplicates counts the records dedup removed; Excluded those of an
	// excluded repository, whose reasons ExcludedRepos gives.
	Duplicates    int               `json:"duplicates"`
	Excluded      int               `json:"excluded"`
	ExcludedRepos map[string]string `json:"excluded_repos"`
	Files         []File            `json:"files"`
}

// File is one output file.
type File struct {
	Split string `json:"split"`
	Path  string `json:"path"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
	// Repos counts the repositories of its rows.
	Repos int `json:"repos"`
}

// Run exports o.In to o.Out and writes the dataset card.
func Run(ctx context.Context, o Options) (*Summary, error) {
	switch o.Kind {
	case SFT:
		if o.Mask == "" {
			o.Mask = MaskNone
		}
		return run(ctx, o, sftRecord(o.Mask, o.Seed, o.Dedup > 0))
	case Triplets:
		sb := o.StateBytes
		switch {
		case sb == 0:
			sb = DefaultStateBytes
		case sb < 0:
			sb = 0
		}
		return run(ctx, o, tripletRecord(sb, o.Dedup > 0))
	case Pretrain:
		return run(ctx, o, pretrainRecord)
	case Transitions:
		return run(ctx, o, transitionRecord(o.Dedup > 0))
	}
	return nil, errkind.Errorf(errkind.Usage, "unknown export kind %q (want sft, pretrain, triplets or transitions)", o.Kind)
}

// output is one output file being written.
type output[R sized] struct {
	File
	sink  *sink[R]
	repos map[string]bool
}

func run[R sized](ctx context.Context, o Options, decode func(string, []byte) (record[R], error)) (*Summary, error) {
	if len(o.In) == 0 {
		return nil, errkind.New(errkind.Usage, "no input files")
	}
	if !(o.EvalShare >= 0 && o.EvalShare < 1) {
		return nil, errkind.Errorf(errkind.Usage, "eval share %v is not in [0, 1)", o.EvalShare)
	}
	format := o.Format
	if format == "" {
		if o.EvalShare > 0 {
			format = Parquet
		} else if format = FormatOf(o.Out); format == "" {
			return nil, errkind.Errorf(errkind.Usage, "%s: name the format with its extension (.jsonl or .parquet) or --format", o.Out)
		}
	}
	sum := &Summary{Kind: o.Kind, Skipped: map[string]int{}, ExcludedRepos: map[string]string{}}
	// A repository is checked once: decided holds whether it is excluded.
	decided := map[string]bool{}
	excluded := func(repo string) bool {
		if o.Exclude == nil {
			return false
		}
		if x, ok := decided[repo]; ok {
			return x
		}
		err := o.Exclude(repo)
		if err != nil {
			sum.ExcludedRepos[repo] = err.Error()
		}
		decided[repo] = err != nil
		return err != nil
	}
	files, err := layout(o, format)
	if err != nil {
		return nil, err
	}
	var keep []bool
	if o.Dedup > 0 {
		if keep, err = dedupPass(ctx, o, decode, excluded); err != nil {
			return nil, err
		}
	}
	// runErr is the export's own error, returned as it is rather than as
	// jsonl.Replace's "write FILE: ..." of the file it was writing.
	var runErr error
	var outs []*output[R]
	err = replaceAll(files, func(ws []*bufio.Writer) error {
		for i, f := range files {
			outs = append(outs, &output[R]{File: f, sink: newSink[R](f.Path, ws[i], format), repos: map[string]bool{}})
		}
		runErr = eachRecord(ctx, o.In, decode, func(i int, r record[R]) error {
			sum.Records++
			switch {
			case r.skip != "":
				sum.Skipped[r.skip]++
				return nil
			case excluded(r.repo):
				sum.Excluded++
				return nil
			case keep != nil && !keep[i]:
				sum.Duplicates++
				return nil
			}
			out := outs[0]
			if len(outs) > 1 && inEval(o.Seed, r.repo, o.EvalShare) {
				out = outs[1]
			}
			out.repos[r.repo] = true
			for _, row := range r.rows {
				if err := out.sink.write(row); err != nil {
					return err
				}
			}
			return nil
		})
		for _, out := range outs {
			if runErr == nil {
				runErr = out.sink.close()
			}
		}
		return runErr
	})
	if runErr != nil {
		return nil, runErr
	}
	if err != nil {
		return nil, err
	}
	for _, out := range outs {
		st, err := os.Stat(out.Path)
		if err != nil {
			return nil, fmt.Errorf("exported file: %w", err)
		}
		out.Rows, out.Bytes, out.Repos = out.sink.rows, st.Size(), len(out.repos)
		sum.Files = append(sum.Files, out.File)
	}
	if err := writeCard(o, schemaOf[R](), sum); err != nil {
		return nil, err
	}
	return sum, nil
}

// layout is the output files of an export, train first, with the
// directory they go in made; a README.md there that is not a card of
// cwm export stops it before anything is written.
func layout(o Options, format Format) ([]File, error) {
	if err := checkCard(o); err != nil {
		return nil, err
	}
	if o.EvalShare == 0 {
		if err := os.MkdirAll(filepath.Dir(o.Out), 0o755); err != nil {
			return nil, fmt.Errorf("create the output's directory: %w", err)
		}
		return []File{{Split: "train", Path: o.Out}}, nil
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("create the output's directory: %w", err)
	}
	return []File{
		{Split: "train", Path: filepath.Join(o.Out, "train"+format.Ext())},
		{Split: "eval", Path: filepath.Join(o.Out, "eval"+format.Ext())},
	}, nil
}

// replaceAll writes files at once, each through jsonl.Replace: fn gets a
// writer per file, and the files are renamed into place only when fn
// succeeds (the last file first).
func replaceAll(files []File, fn func([]*bufio.Writer) error) error {
	if len(files) == 0 {
		return fn(nil)
	}
	return jsonl.Replace(files[0].Path, func(w *bufio.Writer) error {
		return replaceAll(files[1:], func(ws []*bufio.Writer) error {
			return fn(append([]*bufio.Writer{w}, ws...))
		})
	})
}

// eachRecord decodes every line of the inputs in order and calls fn with
// its index among the records. A line that cannot be decoded is an input
// error naming its file and line; so is an input without any line.
func eachRecord[R any](ctx context.Context, in []string, decode func(string, []byte) (record[R], error), fn func(int, record[R]) error) error {
	i := 0
	for _, path := range in {
		lines := 0
		err := jsonl.ScanInput(path, func(_ int, line []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if len(bytes.TrimSpace(line)) == 0 {
				return nil
			}
			lines++
			r, err := decode(path, line)
			if err != nil {
				return errkind.Wrap(errkind.Input, err)
			}
			err = fn(i, r)
			i++
			return err
		})
		if err != nil {
			return err
		}
		if lines == 0 {
			return errkind.Errorf(errkind.Input, "%s: empty: no records to export", path)
		}
	}
	return nil
}

// dedupPass reads the input once for the text of each record and decides
// which are kept: dedup.Dedup over the records of repositories that are
// not excluded, grouped by repository.
func dedupPass[R any](ctx context.Context, o Options, decode func(string, []byte) (record[R], error), excluded func(string) bool) ([]bool, error) {
	var items []dedup.Item
	var index []int // record index of each item
	n := 0
	err := eachRecord(ctx, o.In, decode, func(i int, r record[R]) error {
		n = i + 1
		if r.skip != "" || excluded(r.repo) {
			return nil
		}
		items = append(items, dedup.Item{ID: strconv.Itoa(i), Group: r.repo, Text: r.text})
		index = append(index, i)
		return nil
	})
	if err != nil {
		return nil, err
	}
	kept, _, err := dedup.Dedup(items, dedup.Options{Threshold: o.Dedup})
	if err != nil {
		return nil, fmt.Errorf("dedup: %w", err)
	}
	// Records dedup did not see (skipped or excluded) stay true: the
	// second pass decides them.
	keep := make([]bool, n)
	for i := range keep {
		keep[i] = true
	}
	for _, i := range index {
		keep[i] = false
	}
	for _, k := range kept {
		keep[index[k]] = true
	}
	return keep, nil
}
