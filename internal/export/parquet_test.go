package export

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"

	"cwm/internal/pytestenv"
)

// requirements pins pyarrow and datasets for the readers' test.
const requirements = "testdata/pyarrow-datasets.txt"

// TestParquetReaders: the Parquet files of every kind, and of a split
// loaded through its dataset card, read with pyarrow and with Hugging
// Face datasets give exactly the rows of the JSONL export of the same
// input.
func TestParquetReaders(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the pyarrow and datasets venv")
	}
	py := pytestenv.Python(t, requirements)
	dir := t.TempDir()
	trajs := writeTrajectories(t, dir, 20, 2, 3)
	args := []string{"testdata/readback.py", "files"}
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"sft", Options{Kind: SFT, In: []string{"testdata/trajectories.jsonl", trajs}, Mask: MaskRandom}},
		{"pretrain", Options{Kind: Pretrain, In: []string{"testdata/traces.jsonl"}}},
		{"triplets", Options{Kind: Triplets, In: []string{"testdata/trajectories.jsonl", trajs}}},
	} {
		for _, f := range []Format{JSONL, Parquet} {
			o := c.o
			o.Out = filepath.Join(dir, c.name, c.name+f.Ext())
			if err := os.MkdirAll(filepath.Dir(o.Out), 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			args = append(args, o.Out)
		}
	}
	// A split, in both formats with the same seed.
	for _, f := range []Format{JSONL, Parquet} {
		o := Options{Kind: SFT, In: []string{trajs}, Out: filepath.Join(dir, "split-"+string(f)), Format: f, EvalShare: 0.3, Seed: 3}
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, py, args...)
		cmd.Env = append(os.Environ(), "HF_HUB_OFFLINE=1", "HF_DATASETS_OFFLINE=1",
			"HF_HOME="+filepath.Join(dir, "hf"), "HF_DATASETS_CACHE="+filepath.Join(dir, "hf", "datasets"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", args, err, out)
		}
		t.Logf("%s", out)
	}
	run(args...)
	run("testdata/readback.py", "card", filepath.Join(dir, "split-jsonl"), filepath.Join(dir, "split-parquet"))
}

// TestRowGroups: a Parquet export is written a row group at a time (what
// bounds its memory), and parquet-go reads back the rows written.
func TestRowGroups(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "traces.jsonl")
	var b strings.Builder
	var last []byte
	for i := range 2*rowGroupRows + 10 {
		line := fmt.Sprintf(`{"id": "f%d", "status": "ok", "context": "def main(): # << START_OF_TRACE\n    return %d\n", "frames": [`+
			`{"event": 1, "source": "def main(): # << START_OF_TRACE"}, {"event": 2, "source": "    return %d"}, {"event": 3, "source": "    return %d", "arg": "%d"}]}`, i, i, i, i, i)
		b.WriteString(line + "\n")
		last = []byte(line)
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.parquet")
	if _, err := Run(context.Background(), Options{Kind: Pretrain, In: []string{in}, Out: out}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(pf.RowGroups()); n != 3 {
		t.Errorf("%d rows in %d row groups, want 3 of at most %d rows", pf.NumRows(), n, rowGroupRows)
	}
	got, err := parquet.Read[PretrainRow](f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	want, err := pretrainRecord(in, last)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want.rows[0], got[len(got)-1]); d != "" || len(got) != 2*rowGroupRows+10 {
		t.Errorf("%d rows read back, want %d; last (-want +got):\n%s", len(got), 2*rowGroupRows+10, d)
	}
}
