package export

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/errkind"
)

// TestBadInput: a torn or malformed line is an input error naming the
// file and the line, and so is a record of the wrong kind or of no kind
// and an empty file; nothing is left under the output's name.
func TestBadInput(t *testing.T) {
	traj, err := os.ReadFile("testdata/trajectories.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(traj), "\n")
	cases := []struct {
		name, kind, input, want string
	}{
		{"torn last line", "sft", first + "\n" + first[:40], "in.jsonl:2: the last line is cut off"},
		{"malformed line", "triplets", first + "\n{\"task_id\": \n" + first + "\n", "in.jsonl:2: "},
		{"a trace given to sft", "sft", firstTrace(t) + "\n", "in.jsonl:1: the line is a trace (cwm trace func or trace repo), not a trajectory"},
		{"a trajectory given to pretrain", "pretrain", first + "\n", "in.jsonl:1: the line is a trajectory (cwm forage), not a trace"},
		{"unknown record", "triplets", first + "\n{\"name\": \"x\"}\n", "in.jsonl:2: unknown record: a trajectory line has task_id and messages"},
		{"unknown trace record", "pretrain", "{\"name\": \"x\"}\n", "in.jsonl:1: unknown record: a trace line has context and frames"},
		{"empty input", "sft", "", "in.jsonl: empty: no records to export"},
		{"blank lines only", "pretrain", "\n\n", "in.jsonl: empty: no records to export"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "in.jsonl")
			if err := os.WriteFile(in, []byte(c.input), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out.parquet")
			_, err := Run(context.Background(), Options{Kind: Kind(c.kind), In: []string{in}, Out: out})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Run(%s) = %v, want an error containing %q", c.name, err, c.want)
			}
			if errkind.Of(err) != errkind.Input {
				t.Errorf("Run(%s) = %v of kind %v, want input", c.name, err, errkind.Of(err))
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("after the error the directory holds %d entries, want only the input", len(ents))
			}
		})
	}
}

func firstTrace(t *testing.T) string { return string(firstLine(t, "testdata/traces.jsonl")) }

// TestCardRefusesForeignReadme: a README.md that cwm export did not write
// is not replaced.
func TestCardRefusesForeignReadme(t *testing.T) {
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte("# my project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), Options{Kind: SFT, In: []string{"testdata/trajectories.jsonl"}, Out: filepath.Join(dir, "x.jsonl")})
	if err == nil || !strings.Contains(err.Error(), "is not a card cwm export wrote") {
		t.Fatalf("Run = %v, want a refusal", err)
	}
	if data, _ := os.ReadFile(readme); string(data) != "# my project\n" {
		t.Errorf("README.md became %q", data)
	}
}

// TestUsageErrors: options that cannot be right say so.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	in := []string{"testdata/trajectories.jsonl"}
	cases := []struct {
		o    Options
		want string
	}{
		{Options{Kind: "chat", In: in, Out: filepath.Join(dir, "x.jsonl")}, `unknown export kind "chat"`},
		{Options{Kind: SFT, In: in, Out: filepath.Join(dir, "x.csv")}, "name the format with its extension"},
		{Options{Kind: SFT, Out: filepath.Join(dir, "x.jsonl")}, "no input files"},
		{Options{Kind: SFT, In: in, Out: dir, EvalShare: 1}, "eval share 1 is not in [0, 1)"},
	}
	for _, c := range cases {
		_, err := Run(context.Background(), c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) || errkind.Of(err) != errkind.Usage {
			t.Errorf("Run(%+v) = %v, want a usage error containing %q", c.o, err, c.want)
		}
	}
}
