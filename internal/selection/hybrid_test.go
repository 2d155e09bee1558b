package selection

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// TestHybridAgreesWithR2EGym: on every candidate set of the vectors
// (testdata/reference, made by R2E-Gym's own get_hybrid_aggregation), the
// resolved share among HybridFinalists is the mean R2E-Gym returned, to
// the last bit.
func TestHybridAgreesWithR2EGym(t *testing.T) {
	b, err := os.ReadFile("testdata/reference/r2egym_hybrid.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Sets []struct {
			Regression []float64 `json:"regression"`
			Testgen    []float64 `json:"testgen"`
			Verifier   []float64 `json:"verifier"`
			Resolved   []bool    `json:"resolved"`
			Order      []int     `json:"order"`
			Mean       float64   `json:"mean"`
		} `json:"sets"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	agree := 0
	for n, s := range v.Sets {
		cands := make([]HybridScore, len(s.Order))
		for j, i := range s.Order {
			cands[j] = HybridScore{Regression: s.Regression[i], Testgen: s.Testgen[i], PYes: s.Verifier[i]}
		}
		fin := HybridFinalists(cands)
		resolved := 0
		for _, j := range fin {
			if s.Resolved[s.Order[j]] {
				resolved++
			}
		}
		got := float64(resolved) / float64(len(fin))
		if math.Float64bits(got) != math.Float64bits(s.Mean) {
			t.Errorf("set %d (order %v): hybrid mean %v over finalists %v, R2E-Gym's %v", n, s.Order, got, fin, s.Mean)
		} else {
			agree++
		}
	}
	t.Logf("R2E-Gym's hybrid: %d of %d candidate sets agree", agree, len(v.Sets))
}
