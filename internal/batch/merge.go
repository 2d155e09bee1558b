package batch

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/shard"
)

// MergeSpec says how to put the outputs of a stage's shards back
// together (cwm merge).
type MergeSpec struct {
	// Shards are the shards' output files; Out the merged file.
	Shards []string
	Out    string
	// LineKey is a line's own key: no two lines of the shards may share
	// one (a trace's id, a task's instance_id).
	LineKey func(line []byte) (string, error)
	// ItemKey is the key of the item the line came from, which decided
	// its shard (a task's function, an episode's test); nil when it is
	// LineKey. A line whose item belongs to another shard than its
	// file's was written by a run with another --shard. An empty item key
	// means the line does not say (its placement is not checked).
	ItemKey func(line []byte) (string, error)
	// Expected, when set, are the keys of all the run's items (every
	// shard's): those no line came from are missing. Only stages that
	// write a line for every item can say it.
	Expected []string
	// Count is how many shards the run had; 0 reads it from the markers,
	// or else takes len(Shards).
	Count int
	// Sidecars are files a stage writes beside its output (Out plus a
	// suffix, like tasks' decisions), merged the same way.
	Sidecars []Sidecar
	// Partial writes Out even when a shard is missing, did not finish or
	// lacks items; duplicates and misplaced lines are never written.
	Partial bool
}

// Sidecar is a file beside a stage's output: OUT+Suffix, keyed by Key.
type Sidecar struct {
	Suffix string
	Key    func(line []byte) (string, error)
}

// MergeReport is what Merge found and did.
type MergeReport struct {
	Count int         `json:"shards"`
	Files []ShardFile `json:"files"`
	// Lines is how many lines the merged output has (or would have).
	Lines      int         `json:"lines"`
	Duplicates []Duplicate `json:"duplicates,omitempty"`
	Misplaced  []Misplaced `json:"misplaced,omitempty"`
	// Rerun lists the shards to run again, with why.
	Rerun   []Rerun `json:"rerun,omitempty"`
	Written bool    `json:"written"`
}

// ShardFile is one shard's output as Merge read it.
type ShardFile struct {
	File string `json:"file"`
	// Shard is i/n from its marker, or from its lines when it has none;
	// empty when neither tells.
	Shard    string `json:"shard,omitempty"`
	index    int
	Lines    int  `json:"lines"`
	Finished bool `json:"finished"`
	// Torn is set when the last line was cut off (the run was killed
	// while writing it); the line is left out.
	Torn bool `json:"torn,omitempty"`
}

// Duplicate is a key found on more than one line ("file:line" each).
type Duplicate struct {
	Key   string   `json:"key"`
	Lines []string `json:"lines"`
}

// Misplaced is a line whose item belongs to another shard than its file.
type Misplaced struct {
	Line    string `json:"line"` // file:line
	Key     string `json:"key"`
	Belongs string `json:"belongs"` // i/n
}

// Rerun is a shard to run again and why: no output, a run that did not
// finish, items missing from its output.
type Rerun struct {
	Shard   string   `json:"shard"`
	File    string   `json:"file,omitempty"`
	Reason  string   `json:"reason"`
	Missing []string `json:"missing,omitempty"`
}

// OK reports whether the merge is complete and clean.
func (r *MergeReport) OK() bool {
	return len(r.Duplicates) == 0 && len(r.Misplaced) == 0 && len(r.Rerun) == 0
}

// Merge reads the shards' outputs, checks that no key is on two lines,
// that every line is in its shard's file, that every shard finished (its
// marker) and, with s.Expected, that no item is missing; then writes the
// lines to s.Out (atomically: a reader sees no file or all of it), unless
// a check failed. Duplicates and misplaced lines always stop it; shards to
// re-run stop it unless s.Partial. The report says what was found, the
// error is for files that cannot be read or written, or shards of
// different runs.
func Merge(s MergeSpec) (*MergeReport, error) {
	if len(s.Shards) == 0 {
		return nil, errkind.New(errkind.Usage, "no shard outputs to merge")
	}
	outAbs, _ := filepath.Abs(s.Out)
	for _, f := range s.Shards {
		if a, _ := filepath.Abs(f); a == outAbs {
			return nil, errkind.Errorf(errkind.Usage, "--out %s is one of the shards", s.Out)
		}
	}
	itemKey := s.ItemKey
	if itemKey == nil {
		itemKey = s.LineKey
	}
	rep := &MergeReport{}
	n, err := shardCount(s, rep)
	if err != nil {
		return nil, err
	}
	rep.Count = n

	m := &merger{spec: s, itemKey: itemKey, n: n, rep: rep, lineAt: map[string]string{}, dups: map[string]*Duplicate{}, seen: map[string]bool{}}
	for i := range rep.Files {
		if err := m.read(&rep.Files[i]); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(rep.Files, func(i, j int) bool { return rep.Files[i].index < rep.Files[j].index })
	for _, k := range m.dupOrder {
		rep.Duplicates = append(rep.Duplicates, *m.dups[k])
	}
	m.reruns()
	if len(rep.Duplicates) > 0 || len(rep.Misplaced) > 0 || (len(rep.Rerun) > 0 && !s.Partial) {
		return rep, nil
	}
	if err := m.write(); err != nil {
		return rep, err
	}
	rep.Written = true
	return rep, nil
}

// shardCount reads the markers into rep.Files and decides n.
func shardCount(s MergeSpec, rep *MergeReport) (int, error) {
	n := s.Count
	from := "--shards"
	stage := ""
	for _, f := range s.Shards {
		if _, err := os.Stat(f); err != nil {
			return 0, errkind.Wrap(errkind.NotFound, fmt.Errorf("shard output: %w", err))
		}
		sf := ShardFile{File: f, index: -1}
		mk, err := ReadMarker(f)
		if err != nil {
			return 0, errkind.Wrap(errkind.Input, err)
		}
		if mk != nil {
			part, _ := shard.Parse(mk.Shard)
			switch {
			case stage != "" && mk.Stage != stage:
				return 0, errkind.Errorf(errkind.Input, "%s is an output of %s, the shards before it of %s", f, mk.Stage, stage)
			case n != 0 && part.Count != n:
				return 0, errkind.Errorf(errkind.Input, "%s is shard %s, but %s says %d shards: outputs of different runs", f, mk.Shard, from, n)
			}
			stage, n, from = mk.Stage, part.Count, MarkerPath(f)
			sf.Shard, sf.index, sf.Finished = mk.Shard, part.Index, true
		}
		rep.Files = append(rep.Files, sf)
	}
	if n == 0 {
		n = len(s.Shards)
	}
	return n, nil
}

// merger holds the state of one Merge.
type merger struct {
	spec    MergeSpec
	itemKey func([]byte) (string, error)
	n       int
	rep     *MergeReport
	// lineAt is where each key was first seen (file:line); dups the keys
	// seen again, in dupOrder.
	lineAt   map[string]string
	dups     map[string]*Duplicate
	dupOrder []string
	// seen holds the item keys that have a line.
	seen map[string]bool
}

// read checks the lines of one shard file, and infers its shard from them
// when it has no marker.
func (m *merger) read(sf *ShardFile) error {
	inferred := -1
	var lines []struct {
		at   string
		item int
		key  string
	}
	torn, err := scanShard(sf.File, func(no int, line []byte) error {
		at := fmt.Sprintf("%s:%d", sf.File, no)
		key, err := m.spec.LineKey(line)
		if err != nil {
			return errkind.Wrap(errkind.Input, err)
		}
		item, err := m.itemKey(line)
		if err != nil {
			return errkind.Wrap(errkind.Input, err)
		}
		sf.Lines++
		if first, ok := m.lineAt[key]; ok {
			d := m.dups[key]
			if d == nil {
				d = &Duplicate{Key: key, Lines: []string{first}}
				m.dups[key] = d
				m.dupOrder = append(m.dupOrder, key)
			}
			d.Lines = append(d.Lines, at)
		} else {
			m.lineAt[key] = at
		}
		if item == "" {
			return nil // the line does not say its item
		}
		m.seen[item] = true
		idx := shard.Of(item, m.n)
		if sf.index < 0 {
			switch {
			case inferred == -1:
				inferred = idx
			case inferred != idx:
				inferred = -2 // lines of several shards: no marker tells which is right
			}
		}
		lines = append(lines, struct {
			at   string
			item int
			key  string
		}{at, idx, item})
		return nil
	})
	if err != nil {
		return err
	}
	if torn {
		sf.Torn, sf.Finished = true, false
	}
	if sf.index < 0 && inferred >= 0 {
		sf.index = inferred
		sf.Shard = shard.Shard{Index: inferred, Count: m.n}.String()
	}
	if sf.index >= 0 {
		for _, l := range lines {
			if l.item != sf.index {
				m.rep.Misplaced = append(m.rep.Misplaced, Misplaced{Line: l.at, Key: l.key, Belongs: shard.Shard{Index: l.item, Count: m.n}.String()})
			}
		}
	} else {
		sf.index = m.n // sorts last
	}
	m.rep.Lines += sf.Lines
	return nil
}

// reruns lists the shards with no file, with a file whose run did not
// finish, or with missing items.
func (m *merger) reruns() {
	files := map[int][]ShardFile{}
	for _, sf := range m.rep.Files {
		files[sf.index] = append(files[sf.index], sf)
	}
	missing := map[int][]string{}
	for _, k := range m.spec.Expected {
		if !m.seen[k] {
			i := shard.Of(k, m.n)
			missing[i] = append(missing[i], k)
		}
	}
	for i := 0; i < m.n; i++ {
		name := shard.Shard{Index: i, Count: m.n}.String()
		fs := files[i]
		r := Rerun{Shard: name, Missing: missing[i]}
		switch {
		case len(fs) == 0:
			r.Reason = "no output among the files given"
		case len(fs) > 1:
			var names []string
			for _, f := range fs {
				names = append(names, f.File)
			}
			r.Reason = "several files are this shard: " + strings.Join(names, ", ")
		case fs[0].Torn:
			r.File, r.Reason = fs[0].File, "its last line is cut off: the run was killed while writing"
		case !fs[0].Finished:
			r.File, r.Reason = fs[0].File, "its run did not finish (no marker "+MarkerPath(fs[0].File)+")"
		case len(missing[i]) > 0:
			r.File, r.Reason = fs[0].File, fmt.Sprintf("%d items of the input have no line", len(missing[i]))
		default:
			continue
		}
		m.rep.Rerun = append(m.rep.Rerun, r)
	}
	if extra := files[m.n]; len(extra) > 0 {
		for _, f := range extra {
			m.rep.Rerun = append(m.rep.Rerun, Rerun{File: f.File, Reason: "neither a marker nor its lines say which shard it is"})
		}
	}
}

// write writes the merged output and its sidecars, each to a temporary
// file renamed into place.
func (m *merger) write() error {
	for _, sc := range m.spec.Sidecars {
		if err := m.writeSidecar(sc); err != nil {
			return err
		}
	}
	var srcs []string
	for _, sf := range m.rep.Files {
		srcs = append(srcs, sf.File)
	}
	return concat(m.spec.Out, srcs)
}

// writeSidecar merges the shards' sidecar files (those that exist),
// refusing duplicate keys.
func (m *merger) writeSidecar(sc Sidecar) error {
	seen := map[string]string{}
	var srcs []string
	for _, sf := range m.rep.Files {
		p := sf.File + sc.Suffix
		if _, err := os.Stat(p); err != nil {
			continue
		}
		srcs = append(srcs, p)
		_, err := scanShard(p, func(no int, line []byte) error {
			k, err := sc.Key(line)
			if err != nil {
				return errkind.Wrap(errkind.Input, err)
			}
			if first, ok := seen[k]; ok {
				return errkind.Errorf(errkind.Input, "key %q is also on %s", k, first)
			}
			seen[k] = fmt.Sprintf("%s:%d", p, no)
			return nil
		})
		if err != nil {
			return err
		}
	}
	if len(srcs) == 0 {
		return nil
	}
	return concat(m.spec.Out+sc.Suffix, srcs)
}

// concat writes the complete lines of srcs, in order, to out, replacing
// it at once.
func concat(out string, srcs []string) error {
	return jsonl.Replace(out, func(w *bufio.Writer) error {
		for _, src := range srcs {
			_, err := scanShard(src, func(_ int, line []byte) error {
				w.Write(line)
				return w.WriteByte('\n')
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// scanShard reads the lines of a shard's file: a last line without a
// newline counts when it is valid JSON, and is left out, with torn set,
// when it is not (the run was killed while writing it).
func scanShard(path string, fn func(no int, line []byte) error) (torn bool, err error) {
	err = jsonl.ScanInput(path, fn)
	var te *jsonl.TornLineError
	if errors.As(err, &te) {
		return true, nil
	}
	return false, err
}
