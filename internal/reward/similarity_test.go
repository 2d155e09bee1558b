package reward

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// fixtures is testdata/similarity.json, made by Python's difflib and
// testdata/cwm_similarity.py (CWM's normalization over a standard-library
// port of unidiff) with testdata/gen_similarity.py.
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
		PredictedError      string            `json:"predicted_error"`
		OracleNormalized    map[string]string `json:"oracle_normalized"`
		Score               float64
		PerFile             map[string]float64 `json:"per_file"`
	} `json:"patch_cases"`
	NormalizeCases []struct {
		Name       string
		Patch      string
		Normalized map[string]string
		Error      string
	} `json:"normalize_cases"`
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
	if len(f.RatioCases) == 0 || len(f.LineCases) == 0 || len(f.PatchCases) == 0 || len(f.NormalizeCases) == 0 {
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

// errorKind names the Python exception class an error stands for.
func errorKind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrPatch):
		return "parse"
	case errors.Is(err, ErrPatchCrash):
		return "other"
	}
	return "unexpected: " + err.Error()
}

func TestNormalizeFixtures(t *testing.T) {
	f := loadFixtures(t)
	for _, c := range f.NormalizeCases {
		got, err := Normalize(c.Patch)
		if kind := errorKind(err); kind != c.Error {
			t.Errorf("%s: Normalize(%q) error = %v, want kind %q", c.Name, c.Patch, err, c.Error)
			continue
		}
		if diff := cmp.Diff(c.Normalized, got, cmpopts.EquateEmpty()); err == nil && diff != "" {
			t.Errorf("%s: Normalize(%q) mismatch (-python +go):\n%s", c.Name, c.Patch, diff)
		}
	}
	for _, c := range f.PatchCases {
		got, err := Normalize(c.Predicted)
		if kind := errorKind(err); kind != c.PredictedError {
			t.Errorf("%s: Normalize(predicted) error = %v, want kind %q", c.Name, err, c.PredictedError)
		} else if diff := cmp.Diff(c.PredictedNormalized, got, cmpopts.EquateEmpty()); err == nil && diff != "" {
			t.Errorf("%s: Normalize(predicted) mismatch (-python +go):\n%s", c.Name, diff)
		}
		got, err = Normalize(c.Oracle)
		if err != nil {
			t.Errorf("%s: Normalize(oracle): %v", c.Name, err)
		} else if diff := cmp.Diff(c.OracleNormalized, got); diff != "" {
			t.Errorf("%s: Normalize(oracle) mismatch (-python +go):\n%s", c.Name, diff)
		}
	}
}

func TestSimilarityFixtures(t *testing.T) {
	for _, c := range loadFixtures(t).PatchCases {
		got, err := Similarity(c.Predicted, c.Oracle)
		if err != nil {
			t.Errorf("%s: Similarity: %v", c.Name, err)
			continue
		}
		// Exact equality: the same ratios summed in the same order.
		if got.Mean != c.Score {
			t.Errorf("%s: Similarity = %v, want %v", c.Name, got.Mean, c.Score)
		}
		if diff := cmp.Diff(c.PerFile, got.PerFile); diff != "" {
			t.Errorf("%s: Similarity per file mismatch (-python +go):\n%s", c.Name, diff)
		}
		if (got.PredictedError != "") != (c.PredictedError != "") {
			t.Errorf("%s: Similarity predicted error = %q, want one of kind %q", c.Name, got.PredictedError, c.PredictedError)
		}
	}
}

func TestSimilarityIgnoredAndErrors(t *testing.T) {
	const ok = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
	const extra = ok + "--- a/y\n+++ b/y\n@@ -1 +1 @@\n-c\n+d\n"
	got, err := Similarity(extra, ok)
	if err != nil || got.Mean != 1 || !cmp.Equal(got.Ignored, []string{"y"}) {
		t.Errorf("Similarity(extra file) = %+v, %v; want 1 with y ignored", got, err)
	}
	tests := []struct {
		name, predicted, oracle, wantErr string
	}{
		{"empty oracle", ok, "", "oracle patch changes no text file"},
		{"oracle without files", ok, "just some text\n", "oracle patch changes no text file"},
		{"binary oracle", ok, "diff --git a/b b/b\nindex 1..2\nBinary files a/b and b/b differ\n", "oracle patch changes no text file"},
		{"broken oracle", ok, "--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n-a\n", "parse oracle patch: unparseable patch: hunk"},
	}
	for _, tt := range tests {
		_, err := Similarity(tt.predicted, tt.oracle)
		if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
			t.Errorf("%s: Similarity error = %v, want prefix %q", tt.name, err, tt.wantErr)
		}
	}
}
