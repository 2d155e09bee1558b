package export

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"cwm/internal/errkind"
	"cwm/internal/jsonl"
)

// CardInfo is what the dataset card says of how the files were made.
type CardInfo struct {
	// Command is the command line that made the export, quoted for a
	// shell; Version is cwm's.
	Command, Version string
	// License is the card's licence identifier (Hugging Face's list);
	// "" is "other": the records derive from the code of the repositories
	// they were made from, under those repositories' licences, which cwm
	// does not know.
	License string
}

// cardMarker opens every card cwm writes: a README.md without it is not
// cwm's, and an export refuses to replace it.
const cardMarker = "<!-- dataset card written by cwm export; rewritten by each export to this directory -->"

// cardPath is where the card of an export goes: README.md in the directory
// of its files, where Hugging Face's loaders look for it.
func cardPath(o Options) string {
	if o.EvalShare > 0 {
		return filepath.Join(o.Out, "README.md")
	}
	return filepath.Join(filepath.Dir(o.Out), "README.md")
}

// checkCard refuses an output directory whose README.md cwm did not write.
func checkCard(o Options) error {
	data, err := os.ReadFile(cardPath(o))
	if err != nil || bytes.Contains(data, []byte(cardMarker)) {
		return nil
	}
	return errkind.Errorf(errkind.Input, "%s exists and is not a card cwm export wrote: export to another directory", cardPath(o))
}

// feature is a column in the YAML of Hugging Face's dataset_info.features:
// a dtype, or a list or struct of features.
type feature struct {
	Name   string    `yaml:"name,omitempty"`
	Dtype  string    `yaml:"dtype,omitempty"`
	List   []feature `yaml:"list,omitempty"`
	Struct []feature `yaml:"struct,omitempty"`
}

// schemaOf is the features of row type R, read from its json tags (the
// column names of both formats).
func schemaOf[R any]() []feature { return fieldsOf(reflect.TypeFor[R]()) }

func fieldsOf(t reflect.Type) []feature {
	var fs []feature
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			fs = append(fs, fieldsOf(f.Type)...) // flattened, as both formats do
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		fs = append(fs, featureOf(name, f.Type))
	}
	return fs
}

func featureOf(name string, t reflect.Type) feature {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return feature{Name: name, Dtype: "string"}
	case reflect.Int64:
		return feature{Name: name, Dtype: "int64"}
	case reflect.Float64:
		return feature{Name: name, Dtype: "float64"}
	case reflect.Bool:
		return feature{Name: name, Dtype: "bool"}
	case reflect.Struct:
		return feature{Name: name, Struct: fieldsOf(t)}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return feature{Name: name, List: fieldsOf(t.Elem())}
		}
	}
	panic("export: no dataset feature for " + t.String()) // the row types are ours
}

type cardHeader struct {
	License     string      `yaml:"license"`
	LicenseName string      `yaml:"license_name,omitempty"`
	PrettyName  string      `yaml:"pretty_name"`
	Tags        []string    `yaml:"tags"`
	Configs     []config    `yaml:"configs"`
	DatasetInfo datasetInfo `yaml:"dataset_info"`
	// CWM is how the files were made, in the header too so that a program
	// reading the card's metadata finds it (the loaders ignore keys they
	// do not know).
	CWM provenance `yaml:"cwm"`
}

type provenance struct {
	Version string   `yaml:"version"`
	Command string   `yaml:"command"`
	Kind    string   `yaml:"kind"`
	Sources []source `yaml:"sources"`
	Counts  counts   `yaml:"counts"`
}

type source struct {
	Path   string `yaml:"path"`
	SHA256 string `yaml:"sha256"`
	Bytes  int64  `yaml:"bytes"`
}

type counts struct {
	Records    int            `yaml:"records"`
	Duplicates int            `yaml:"duplicates"`
	Excluded   int            `yaml:"excluded"`
	Skipped    map[string]int `yaml:"skipped"`
}

type config struct {
	Name      string      `yaml:"config_name"`
	DataFiles []dataFiles `yaml:"data_files"`
}

type dataFiles struct {
	Split string `yaml:"split"`
	Path  string `yaml:"path"`
}

type datasetInfo struct {
	Features []feature `yaml:"features"`
	Splits   []split   `yaml:"splits"`
}

// split is a split's entry in dataset_info; NumBytes is its file's size
// (Hugging Face's own cards give the size in memory, which only a reader
// knows; the loaders verify NumExamples, not NumBytes).
type split struct {
	Name        string `yaml:"name"`
	NumBytes    int64  `yaml:"num_bytes"`
	NumExamples int64  `yaml:"num_examples"`
}

// writeCard writes README.md: Hugging Face's YAML header (licence, the
// files of each split, the features and the row counts, and under "cwm"
// the version, the command, the counts and the input files with their
// sha256), then the same for people.
func writeCard(o Options, features []feature, sum *Summary) error {
	h := cardHeader{
		License:     o.Card.License,
		PrettyName:  "cwm " + string(o.Kind) + " export",
		Tags:        []string{"cwm", "code-world-model", string(o.Kind)},
		DatasetInfo: datasetInfo{Features: features},
	}
	if h.License == "" {
		h.License, h.LicenseName = "other", "source-repositories"
	}
	h.CWM = provenance{Version: o.Card.Version, Command: o.Card.Command, Kind: string(o.Kind),
		Counts: counts{Records: sum.Records, Duplicates: sum.Duplicates, Excluded: sum.Excluded, Skipped: sum.Skipped}}
	for _, in := range o.In {
		sha, n, err := fileSHA256(in)
		if err != nil {
			return err
		}
		h.CWM.Sources = append(h.CWM.Sources, source{Path: in, SHA256: sha, Bytes: n})
	}
	cfg := config{Name: "default"}
	for _, f := range sum.Files {
		cfg.DataFiles = append(cfg.DataFiles, dataFiles{Split: f.Split, Path: filepath.Base(f.Path)})
		h.DatasetInfo.Splits = append(h.DatasetInfo.Splits, split{Name: f.Split, NumBytes: f.Bytes, NumExamples: f.Rows})
	}
	h.Configs = []config{cfg}
	var head bytes.Buffer
	enc := yaml.NewEncoder(&head)
	enc.SetIndent(2)
	if err := enc.Encode(h); err != nil {
		return fmt.Errorf("dataset card: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "---\n%s---\n%s\n\n# cwm %s export\n\n", head.String(), cardMarker, o.Kind)
	fmt.Fprintf(&b, "Made by cwm %s with:\n\n```\n%s\n```\n\n", o.Card.Version, o.Card.Command)
	fmt.Fprintf(&b, "The record shape and every flag are described in cwm's docs/export.md.\n\n")
	b.WriteString("## Files\n\n| split | file | rows | repositories | bytes |\n|---|---|---|---|---|\n")
	for _, f := range sum.Files {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d |\n", f.Split, filepath.Base(f.Path), f.Rows, f.Repos, f.Bytes)
	}
	fmt.Fprintf(&b, "\n## Counts\n\n- input records: %d\n- near-duplicates removed: %d\n- records of excluded repositories (decontamination): %d\n",
		sum.Records, sum.Duplicates, sum.Excluded)
	for _, reason := range slices.Sorted(maps.Keys(sum.Skipped)) {
		fmt.Fprintf(&b, "- skipped, %s: %d\n", reason, sum.Skipped[reason])
	}
	for _, repo := range slices.Sorted(maps.Keys(sum.ExcludedRepos)) {
		fmt.Fprintf(&b, "- excluded %s: %s\n", repo, sum.ExcludedRepos[repo])
	}
	b.WriteString("\n## Sources\n\n| input | sha256 | bytes |\n|---|---|---|\n")
	for _, src := range h.CWM.Sources {
		fmt.Fprintf(&b, "| %s | %s | %d |\n", src.Path, src.SHA256, src.Bytes)
	}
	b.WriteString("\n## Licence\n\n")
	if o.Card.License == "" {
		b.WriteString("The records are derived from the code of the repositories they were made from and\n" +
			"fall under those repositories' licences; cwm does not know them (`license: other`).\n" +
			"Set the licence with `--license ID` when it is known.\n")
	} else {
		fmt.Fprintf(&b, "`%s`, as given by `--license`.\n", o.Card.License)
	}
	return jsonl.Replace(cardPath(o), func(w *bufio.Writer) error {
		_, err := w.WriteString(b.String())
		return err
	})
}

func fileSHA256(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("hash input: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
