package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"cwm/internal/command"
	"cwm/internal/export"
)

// exportFlags are the flags the three export commands share, and their
// run: what differs between them is the kind and its own options.
type exportFlags struct {
	in           command.StringList
	out, format  string
	dedup        float64
	excludeRepos string
	split        string
	seed         uint64
	license      string
	json         bool
	fs           *flag.FlagSet // for the command line the card records
}

const exportFooter = `
Output: --out FILE, JSONL (.jsonl) or Parquet (.parquet) by its extension
or --format; with --split-by-repo, --out is a directory that gets
train.EXT and eval.EXT (Parquet unless --format). README.md, a Hugging
Face dataset card (features, counts, the inputs' sha256, licence, cwm's
version and this command), goes beside the files. Records of repositories
on the decontamination list are left out (--exclude-repos, by default
SWE-bench's), near-duplicates with --dedup. See docs/export.md.`

func (c *exportFlags) bind(fs *flag.FlagSet, inWhat string) {
	c.fs = fs
	fs.Var(&c.in, "in", inWhat+" `FILE` (JSONL; repeat for more)")
	fs.StringVar(&c.out, "out", "", "output `FILE` (.jsonl or .parquet), or the directory of a split (replaced)")
	fs.StringVar(&c.format, "format", "", "output `FORMAT`: jsonl or parquet (default: --out's extension; parquet for a split)")
	fs.Float64Var(&c.dedup, "dedup", 0, "remove records at least this Jaccard-similar to a kept one of their repository (0: keep all; CWM used 0.5)")
	fs.StringVar(&c.excludeRepos, "exclude-repos", "", "decontamination list `FILE` (default: the SWE-bench repositories; none: no check)")
	fs.StringVar(&c.split, "split-by-repo", "", "`eval=SHARE`: that share of the repositories to eval.EXT, the rest to train.EXT")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the split and of --mask random")
	fs.StringVar(&c.license, "license", "", "licence `ID` for the dataset card (default: other, the source repositories' licences)")
	fs.BoolVar(&c.json, "json", false, "print the summary as JSON")
}

// run checks the shared flags, then exports with the options set has added.
func (c *exportFlags) run(ctx context.Context, e *command.Env, kind export.Kind, args []string, set func(*export.Options) error) error {
	if len(args) > 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	if len(c.in) == 0 || c.out == "" {
		return command.Usagef("--in and --out are required")
	}
	o := export.Options{Kind: kind, In: c.in, Out: c.out, Seed: c.seed, Dedup: c.dedup,
		Card: export.CardInfo{Command: c.commandLine(kind), Version: Version, License: c.license}}
	var err error
	if c.format != "" {
		if o.Format, err = export.ParseFormat(c.format); err != nil {
			return command.Usagef("--format: %v", err)
		}
	}
	if !(c.dedup >= 0 && c.dedup <= 1) {
		return command.Usagef("--dedup %v is not in [0, 1]", c.dedup)
	}
	if c.split != "" {
		if o.EvalShare, err = parseSplit(c.split); err != nil {
			return command.Usagef("--split-by-repo: %v", err)
		}
	} else if o.Format == "" && export.FormatOf(c.out) == "" {
		return command.Usagef("--out %s: name the format with the extension .jsonl or .parquet, or --format", c.out)
	}
	excl, err := exclusions(ctx, c.excludeRepos)
	if err != nil {
		return err
	}
	if excl != nil {
		o.Exclude = excl.CheckName
	}
	if err := set(&o); err != nil {
		return err
	}
	sum, err := export.Run(ctx, o)
	if err != nil {
		return fmt.Errorf("export %s: %w", kind, err)
	}
	if c.json {
		return writeJSON(e.Stdout, sum)
	}
	return writeExportSummary(e.Stdout, sum)
}

// parseSplit reads "eval=SHARE", SHARE in (0, 1).
func parseSplit(s string) (float64, error) {
	name, v, ok := strings.Cut(s, "=")
	if !ok || name != "eval" {
		return 0, fmt.Errorf("%q is not eval=SHARE", s)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0 && f < 1) {
		return 0, fmt.Errorf("share %q is not a number in (0, 1)", v)
	}
	return f, nil
}

// commandLine is the command as the card records it: cwm export KIND and
// the flags that were set, in name order, quoted for a shell.
func (c *exportFlags) commandLine(kind export.Kind) string {
	parts := []string{"cwm", "export", string(kind)}
	c.fs.Visit(func(f *flag.Flag) {
		if l, ok := f.Value.(*command.StringList); ok {
			for _, v := range *l {
				parts = append(parts, "--"+f.Name, shellWord(v))
			}
			return
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			parts = append(parts, "--"+f.Name+"="+f.Value.String())
			return
		}
		parts = append(parts, "--"+f.Name, shellWord(f.Value.String()))
	})
	return strings.Join(parts, " ")
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func writeExportSummary(w io.Writer, sum *export.Summary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "read %d records", sum.Records)
	if sum.Duplicates > 0 || sum.Excluded > 0 {
		fmt.Fprintf(&b, "; left out %d of excluded repositories and %d near-duplicates", sum.Excluded, sum.Duplicates)
	}
	b.WriteString("\n")
	for _, f := range sum.Files {
		fmt.Fprintf(&b, "  %s: %s, %d rows from %d repositories, %d bytes\n", f.Split, f.Path, f.Rows, f.Repos, f.Bytes)
	}
	for _, reason := range slices.Sorted(maps.Keys(sum.Skipped)) {
		fmt.Fprintf(&b, "  skipped %d: %s\n", sum.Skipped[reason], reason)
	}
	if len(sum.Files) > 0 {
		fmt.Fprintf(&b, "dataset card: %s\n", filepath.Join(filepath.Dir(sum.Files[0].Path), "README.md"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
