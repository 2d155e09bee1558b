package batch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/shard"
)

// shardOutputs writes what n shards of a stage with one line per item
// would: shard i's file holds the items of keys whose shard is i, with a
// marker when finished[i].
func shardOutputs(t *testing.T, dir string, keys []string, n int, finished func(i int) bool) []string {
	t.Helper()
	var files []string
	for i := range n {
		part := shard.Shard{Index: i, Count: n}
		out := filepath.Join(dir, fmt.Sprintf("out.%d.jsonl", i))
		run, err := StartShard("test stage", out, part, filepath.Join(dir, "in.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		items := 0
		for _, k := range keys {
			if part.Has(k) {
				fmt.Fprintf(&b, `{"id":%q,"v":%d}`+"\n", k, len(k))
				items++
			}
		}
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if finished(i) {
			if err := run.Finish(items); err != nil {
				t.Fatal(err)
			}
		}
		files = append(files, out)
	}
	return files
}

func testKeys(n int) []string {
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprintf("item-%03d", i))
	}
	return keys
}

func lineKeys(t *testing.T, path string) []string {
	t.Helper()
	var got []string
	if err := jsonl.ScanInput(path, func(_ int, line []byte) error {
		k, err := jsonl.Field("id")(line)
		got = append(got, k)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestMergeClean(t *testing.T) {
	dir := t.TempDir()
	keys := testKeys(60)
	files := shardOutputs(t, dir, keys, 4, func(int) bool { return true })
	// Given in another order, merged in shard order.
	given := []string{files[2], files[0], files[3], files[1]}
	out := filepath.Join(dir, "all.jsonl")
	rep, err := Merge(MergeSpec{Shards: given, Out: out, LineKey: jsonl.Field("id"), Expected: keys})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || !rep.Written || rep.Count != 4 || rep.Lines != 60 {
		t.Fatalf("Merge = %+v, want 60 lines of 4 shards written", rep)
	}
	for i, f := range rep.Files {
		if f.Shard != fmt.Sprintf("%d/4", i) || !f.Finished || f.File != files[i] {
			t.Errorf("Files[%d] = %+v, want %s, shard %d/4, finished", i, f, files[i], i)
		}
	}
	got := lineKeys(t, out)
	var want []string
	for i := range 4 {
		want = append(want, lineKeys(t, files[i])...)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merged lines (-shard order +got):\n%s", diff)
	}
	sort.Strings(got)
	if diff := cmp.Diff(keys, got); diff != "" {
		t.Errorf("merged keys (-input +merged):\n%s", diff)
	}
}

func TestMergeRefuses(t *testing.T) {
	keys := testKeys(40)
	cases := []struct {
		name  string
		spoil func(t *testing.T, files []string)
		check func(t *testing.T, rep *MergeReport)
	}{
		{"a shard did not finish", func(t *testing.T, files []string) {
			os.Remove(MarkerPath(files[1]))
		}, func(t *testing.T, rep *MergeReport) {
			want := []Rerun{{Shard: "1/3", File: "out.1.jsonl", Reason: "its run did not finish (no marker out.1.jsonl.shard.json)"}}
			if diff := cmp.Diff(want, rebase(rep.Rerun)); diff != "" {
				t.Errorf("Rerun (-want +got):\n%s", diff)
			}
		}},
		{"items missing", func(t *testing.T, files []string) {
			data, _ := os.ReadFile(files[2])
			lines := strings.SplitAfter(string(data), "\n")
			os.WriteFile(files[2], []byte(strings.Join(lines[2:], "")), 0o644)
		}, func(t *testing.T, rep *MergeReport) {
			if len(rep.Rerun) != 1 || rep.Rerun[0].Shard != "2/3" || len(rep.Rerun[0].Missing) != 2 {
				t.Errorf("Rerun = %+v, want shard 2/3 with 2 missing items", rep.Rerun)
			}
			for _, k := range rep.Rerun[0].Missing {
				if shard.Of(k, 3) != 2 {
					t.Errorf("missing %q is not of shard 2/3", k)
				}
			}
		}},
		{"a shard not given", func(t *testing.T, files []string) {}, nil},
		{"a torn last line", func(t *testing.T, files []string) {
			f, _ := os.OpenFile(files[0], os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(`{"id":"item-9`)
			f.Close()
		}, func(t *testing.T, rep *MergeReport) {
			if len(rep.Rerun) != 1 || rep.Rerun[0].Shard != "0/3" || !strings.Contains(rep.Rerun[0].Reason, "cut off") {
				t.Errorf("Rerun = %+v, want shard 0/3, its last line cut off", rep.Rerun)
			}
		}},
		{"a duplicate", func(t *testing.T, files []string) {
			data, _ := os.ReadFile(files[0])
			first, _, _ := strings.Cut(string(data), "\n")
			f, _ := os.OpenFile(files[1], os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(first + "\n")
			f.Close()
		}, func(t *testing.T, rep *MergeReport) {
			if len(rep.Duplicates) != 1 || len(rep.Duplicates[0].Lines) != 2 || !strings.HasPrefix(rep.Duplicates[0].Lines[0], "out.0.jsonl:1") {
				t.Errorf("Duplicates = %+v, want one key on out.0.jsonl:1 and in out.1.jsonl", rep.Duplicates)
			}
			if len(rep.Misplaced) != 1 || rep.Misplaced[0].Belongs != "0/3" {
				t.Errorf("Misplaced = %+v, want the copied line, which belongs to 0/3", rep.Misplaced)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			abs := shardOutputs(t, dir, keys, 3, func(int) bool { return true })
			files := []string{"out.0.jsonl", "out.1.jsonl", "out.2.jsonl"}
			c.spoil(t, abs)
			given := files
			if c.check == nil { // a shard not given
				given = files[:2]
				c.check = func(t *testing.T, rep *MergeReport) {
					if len(rep.Rerun) != 1 || rep.Rerun[0].Shard != "2/3" || rep.Rerun[0].Reason != "no output among the files given" {
						t.Errorf("Rerun = %+v, want shard 2/3 without output", rep.Rerun)
					}
				}
			}
			rep, err := Merge(MergeSpec{Shards: given, Out: "all.jsonl", LineKey: jsonl.Field("id"), Expected: keys})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() || rep.Written {
				t.Fatalf("Merge = %+v, want a refusal", rep)
			}
			if _, err := os.Stat("all.jsonl"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("refused merge left all.jsonl: %v", err)
			}
			c.check(t, rep)
			leftovers, _ := filepath.Glob(".all.jsonl.merge-*")
			if len(leftovers) > 0 {
				t.Errorf("temporary files left: %v", leftovers)
			}
		})
	}
}

// rebase drops the directory from Rerun's files, for comparison.
func rebase(rs []Rerun) []Rerun {
	for i := range rs {
		rs[i].File = filepath.Base(rs[i].File)
	}
	return rs
}

func TestMergePartialAndInferred(t *testing.T) {
	dir := t.TempDir()
	keys := testKeys(30)
	// No markers at all (shards run by hand without n > 1 markers, or
	// files copied without them): the shard of each file is read from
	// its lines, and no run counts as finished.
	files := shardOutputs(t, dir, keys, 2, func(int) bool { return false })
	out := filepath.Join(dir, "all.jsonl")
	rep, err := Merge(MergeSpec{Shards: []string{files[1], files[0]}, Out: out, LineKey: jsonl.Field("id"), Partial: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Written || len(rep.Rerun) != 2 || rep.Files[0].Shard != "0/2" || rep.Files[1].Shard != "1/2" {
		t.Fatalf("Merge = %+v, want both shards inferred, both unfinished, written (partial)", rep)
	}
	if got := lineKeys(t, out); len(got) != 30 {
		t.Errorf("merged %d lines, want 30", len(got))
	}
}

func TestMergeErrors(t *testing.T) {
	dir := t.TempDir()
	keys := testKeys(10)
	a := shardOutputs(t, filepath.Join(dir), keys, 2, func(int) bool { return true })
	sub := filepath.Join(dir, "other")
	os.Mkdir(sub, 0o755)
	b := shardOutputs(t, sub, keys, 3, func(int) bool { return true })
	cases := []struct {
		name string
		spec MergeSpec
		kind errkind.Kind
		msg  string
	}{
		{"different runs", MergeSpec{Shards: []string{a[0], b[1]}, Out: filepath.Join(dir, "x.jsonl")}, errkind.Input, "outputs of different runs"},
		{"out is a shard", MergeSpec{Shards: a, Out: a[1]}, errkind.Usage, "is one of the shards"},
		{"no shards", MergeSpec{Out: "x"}, errkind.Usage, "no shard outputs"},
		{"missing file", MergeSpec{Shards: []string{filepath.Join(dir, "nope.jsonl")}, Out: "x"}, errkind.NotFound, "nope.jsonl"},
		{"--shards disagrees", MergeSpec{Shards: a, Out: filepath.Join(dir, "x.jsonl"), Count: 5}, errkind.Input, "says 5 shards"},
	}
	for _, c := range cases {
		c.spec.LineKey = jsonl.Field("id")
		_, err := Merge(c.spec)
		if err == nil || errkind.Of(err) != c.kind || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: Merge error = %v (kind %v), want kind %v containing %q", c.name, err, errkind.Of(err), c.kind, c.msg)
		}
	}
}

func TestMergeSidecars(t *testing.T) {
	dir := t.TempDir()
	keys := testKeys(20)
	files := shardOutputs(t, dir, keys, 2, func(int) bool { return true })
	for i, f := range files {
		os.WriteFile(f+".decisions.jsonl", []byte(fmt.Sprintf(`{"key":"d%d"}`+"\n"+`{"key":"e%d"}`+"\n", i, i)), 0o644)
	}
	out := filepath.Join(dir, "all.jsonl")
	spec := MergeSpec{Shards: files, Out: out, LineKey: jsonl.Field("id"),
		Sidecars: []Sidecar{{Suffix: ".decisions.jsonl", Key: jsonl.Field("key")}}}
	if rep, err := Merge(spec); err != nil || !rep.Written {
		t.Fatalf("Merge = %+v, %v", rep, err)
	}
	data, _ := os.ReadFile(out + ".decisions.jsonl")
	if want := `{"key":"d0"}` + "\n" + `{"key":"e0"}` + "\n" + `{"key":"d1"}` + "\n" + `{"key":"e1"}` + "\n"; string(data) != want {
		t.Errorf("merged decisions = %q, want %q", data, want)
	}
	os.Remove(out)
	os.Remove(out + ".decisions.jsonl")
	os.WriteFile(files[1]+".decisions.jsonl", []byte(`{"key":"d0"}`+"\n"), 0o644)
	if _, err := Merge(spec); err == nil || !strings.Contains(err.Error(), `key "d0" is also on`) {
		t.Errorf("Merge with a decision in two shards = %v, want a duplicate key error", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("failed merge wrote %s", out)
	}
}

func TestShardRunMarker(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	if r, err := StartShard("s", out, shard.All); r != nil || err != nil {
		t.Fatalf("StartShard(whole run) = %v, %v; want nothing to mark", r, err)
	}
	var none *ShardRun
	none.Param("x", "y")
	if err := none.Finish(3); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(MarkerPath(out)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a whole run wrote a marker")
	}
	r, err := StartShard("trace func", out, shard.Shard{Index: 1, Count: 2}, "in.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	r.Param("samples", "4")
	if err := r.Finish(7); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMarker(out)
	if err != nil || m == nil {
		t.Fatalf("ReadMarker = %v, %v", m, err)
	}
	wd, _ := os.Getwd()
	want := Marker{Stage: "trace func", Shard: "1/2", Inputs: []string{filepath.Join(wd, "in.jsonl")}, Params: map[string]string{"samples": "4"}, Items: 7, Finished: m.Finished}
	if diff := cmp.Diff(want, *m); diff != "" {
		t.Errorf("marker (-want +got):\n%s", diff)
	}
	// A new run of the shard removes it first.
	if _, err := StartShard("trace func", out, shard.Shard{Index: 1, Count: 2}); err != nil {
		t.Fatal(err)
	}
	if m, err := ReadMarker(out); m != nil || err != nil {
		t.Errorf("marker after a new start = %v, %v; want none", m, err)
	}
}
