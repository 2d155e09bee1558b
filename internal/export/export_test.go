package export

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/golden"
)

// exportTo runs an export of in to a file of dir and returns its bytes.
func exportTo(t *testing.T, o Options) (*Summary, []byte) {
	t.Helper()
	sum, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run(%s, %v) = %v", o.Kind, o.In, err)
	}
	data, err := os.ReadFile(sum.Files[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	return sum, data
}

// TestGolden: the records of each kind, from inputs holding every case
// the readers meet (the cwm and openai protocols, a format error, a last
// reply nothing answered, an incomplete trace, a repository episode,
// fields added by later versions), are the golden files; and so is the
// dataset card.
func TestGolden(t *testing.T) {
	cases := []struct {
		name string
		o    Options
	}{
		{"sft_none", Options{Kind: SFT, In: []string{"testdata/trajectories.jsonl"}, Mask: MaskNone}},
		{"sft_all", Options{Kind: SFT, In: []string{"testdata/trajectories.jsonl"}, Mask: MaskAll}},
		{"sft_random", Options{Kind: SFT, In: []string{"testdata/trajectories.jsonl"}, Mask: MaskRandom, Seed: 1}},
		{"pretrain", Options{Kind: Pretrain, In: []string{"testdata/traces.jsonl"}}},
		{"triplets", Options{Kind: Triplets, In: []string{"testdata/trajectories.jsonl"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.o.Out = filepath.Join(dir, c.name+".jsonl")
			c.o.Card = CardInfo{Command: "cwm export " + string(c.o.Kind) + " ...", Version: "test"}
			_, data := exportTo(t, c.o)
			golden.Check(t, filepath.Join("testdata", "golden", c.name+".jsonl"), string(data))
			if c.o.Kind != Pretrain {
				return
			}
			card, err := os.ReadFile(filepath.Join(dir, "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "golden", "pretrain.README.md"), string(card))
		})
	}
}

// TestPretrainIsCWMText: the paper's worked example (CWM-SPEC 1.4) comes
// out byte for byte as internal/trace's golden text, which opens with
// "<|begin_of_text|><|trace_context_start|>$CONTEXT<|frame_sep|>" and ends
// every frame with <|frame_sep|> and the trace with <|end_of_text|>.
func TestPretrainIsCWMText(t *testing.T) {
	want, err := os.ReadFile("../trace/testdata/paper_example.txt")
	if err != nil {
		t.Fatal(err)
	}
	r, err := pretrainRecord("testdata/traces.jsonl", firstLine(t, "testdata/traces.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	got := r.rows[0].Text
	if got != strings.TrimSuffix(string(want), "\n") && got != string(want) {
		t.Errorf("text of the paper's example:\n%s\nwant\n%s", got, want)
	}
	if !strings.HasPrefix(got, "<|begin_of_text|><|trace_context_start|>def f(a,b):") || !strings.HasSuffix(got, "<|frame_sep|><|end_of_text|>") {
		t.Errorf("text %q does not open and end as CWM-SPEC 1.1 says", got)
	}
}

func firstLine(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return []byte(line)
}
