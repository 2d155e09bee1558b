package reward

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fixtures is testdata/similarity.json, made by Python's difflib with
// testdata/gen_similarity.py.
type fixtures struct {
	Python     string `json:"python"`
	RatioCases []struct {
		Name   string
		A      string
		B      string
		Ratio  float64
		Blocks [][3]int
	} `json:"ratio_cases"`
	LineCases []struct {
		Name   string
		A      []string
		B      []string
		Ratio  float64
		Blocks [][3]int
	} `json:"line_cases"`
	PatchCases []struct {
		Name                string
		Predicted           string
		Oracle              string
		PredictedNormalized map[string]string `json:"predicted_normalized"`
		OracleNormalized    map[string]string `json:"oracle_normalized"`
		Score               float64
		PerFile             map[string]float64 `json:"per_file"`
	} `json:"patch_cases"`
}

func loadFixtures(t *testing.T) fixtures {
	t.Helper()
	data, err := os.ReadFile("testdata/similarity.json")
	if err != nil {
		t.Fatal(err)
	}
	var f fixtures
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("decode testdata/similarity.json: %v", err)
	}
	if len(f.RatioCases) == 0 || len(f.LineCases) == 0 || len(f.PatchCases) == 0 {
		t.Fatal("testdata/similarity.json has an empty case list")
	}
	return f
}

func blocks(ms []Match) [][3]int {
	out := make([][3]int, len(ms))
	for i, m := range ms {
		out[i] = [3]int{m.A, m.B, m.Size}
	}
	return out
}

func TestRatioMatchesDifflib(t *testing.T) {
	f := loadFixtures(t)
	for _, c := range f.RatioCases {
		m := NewSequenceMatcher([]rune(c.A), []rune(c.B))
		// Exact equality: the same integer counts give the same float.
		if got := m.Ratio(); got != c.Ratio {
			t.Errorf("%s: Ratio(%.60q, %.60q) = %v, want %v (Python %s)", c.Name, c.A, c.B, got, c.Ratio, f.Python)
		}
		if diff := cmp.Diff(c.Blocks, blocks(m.MatchingBlocks())); diff != "" {
			t.Errorf("%s: MatchingBlocks differ from difflib (-python +go):\n%s", c.Name, diff)
		}
		if got := Ratio(c.A, c.B); got != c.Ratio {
			t.Errorf("%s: Ratio(%.60q, %.60q) = %v, want %v", c.Name, c.A, c.B, got, c.Ratio)
		}
	}
}

func TestLineRatioMatchesDifflib(t *testing.T) {
	for _, c := range loadFixtures(t).LineCases {
		m := NewSequenceMatcher(c.A, c.B)
		if got := m.Ratio(); got != c.Ratio {
			t.Errorf("%s: ratio of %q and %q = %v, want %v", c.Name, c.A, c.B, got, c.Ratio)
		}
		if diff := cmp.Diff(c.Blocks, blocks(m.MatchingBlocks())); diff != "" {
			t.Errorf("%s: MatchingBlocks differ from difflib (-python +go):\n%s", c.Name, diff)
		}
	}
}

func TestSimilarityFixtures(t *testing.T) {
	for _, c := range loadFixtures(t).PatchCases {
		got, err := Normalize(c.Predicted)
		if err != nil {
			t.Errorf("%s: Normalize(predicted): %v", c.Name, err)
		} else if diff := cmp.Diff(c.PredictedNormalized, got); diff != "" {
			t.Errorf("%s: Normalize(predicted) mismatch (-want +got):\n%s", c.Name, diff)
		}
		got, err = Normalize(c.Oracle)
		if err != nil {
			t.Errorf("%s: Normalize(oracle): %v", c.Name, err)
		} else if diff := cmp.Diff(c.OracleNormalized, got); diff != "" {
			t.Errorf("%s: Normalize(oracle) mismatch (-want +got):\n%s", c.Name, diff)
		}
		score, perFile, err := Similarity(c.Predicted, c.Oracle)
		if err != nil {
			t.Errorf("%s: Similarity: %v", c.Name, err)
			continue
		}
		if score != c.Score {
			t.Errorf("%s: Similarity score = %v, want %v", c.Name, score, c.Score)
		}
		if diff := cmp.Diff(c.PerFile, perFile); diff != "" {
			t.Errorf("%s: Similarity per file mismatch (-want +got):\n%s", c.Name, diff)
		}
	}
}

func TestSimilarityErrors(t *testing.T) {
	const ok = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
	tests := []struct {
		name, predicted, oracle, wantErr string
	}{
		{"empty oracle", ok, "", "oracle patch changes no files"},
		{"oracle without files", ok, "just some text\n", "oracle patch changes no files"},
		{"broken oracle", ok, "--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n-a\n", "parse oracle patch: diff line 4: hunk"},
		{"broken prediction", "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-a\n+b\n", ok, "parse predicted patch: diff line 5: hunk"},
	}
	for _, tt := range tests {
		_, _, err := Similarity(tt.predicted, tt.oracle)
		if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
			t.Errorf("%s: Similarity error = %v, want prefix %q", tt.name, err, tt.wantErr)
		}
	}
}
