package passk

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// TestEstimateAgreesWithCruxEval: Estimate equals CruxEval's pass_at_k to
// the last bit on every vector of testdata (made by CruxEval's own code,
// see internal/eval/testdata/reference/README.md).
func TestEstimateAgreesWithCruxEval(t *testing.T) {
	b, err := os.ReadFile("../eval/testdata/reference/cruxeval_passk.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Estimates [][4]float64 `json:"estimates"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	agree := 0
	for _, e := range v.Estimates {
		n, c, k := int(e[0]), int(e[1]), int(e[2])
		if got := Estimate(n, c, k); math.Float64bits(got) != math.Float64bits(e[3]) {
			t.Errorf("Estimate(%d, %d, %d) = %v, CruxEval's pass_at_k %v", n, c, k, got, e[3])
		} else {
			agree++
		}
	}
	t.Logf("pass@k: %d of %d estimates equal CruxEval's to the last bit", agree, len(v.Estimates))
}

// TestEstimateOutsideDomain: k beyond the samples draws them all, k <= 0
// draws none.
func TestEstimateOutsideDomain(t *testing.T) {
	cases := []struct {
		n, c, k int
		want    float64
	}{
		{3, 0, 5, 0}, {3, 1, 5, 1}, {0, 0, 1, 0}, {5, 5, 0, 0}, {5, 2, -1, 0},
	}
	for _, c := range cases {
		if got := Estimate(c.n, c.c, c.k); got != c.want {
			t.Errorf("Estimate(%d, %d, %d) = %v, want %v", c.n, c.c, c.k, got, c.want)
		}
	}
}

func TestSamples(t *testing.T) {
	cases := []struct {
		n, c, echoed int
		e            Echo
		wantN, wantC int
	}{
		{10, 3, 3, EchoWrong, 10, 3},
		{10, 3, 3, EchoDrop, 7, 3},
		{10, 0, 5, EchoDrop, 10, 0}, // no right sample: all count
		{10, 1, 9, EchoDrop, 1, 1},
	}
	for _, c := range cases {
		if n, cc := Samples(c.n, c.c, c.echoed, c.e); n != c.wantN || cc != c.wantC {
			t.Errorf("Samples(%d, %d, %d, %s) = %d, %d, want %d, %d", c.n, c.c, c.echoed, c.e, n, cc, c.wantN, c.wantC)
		}
	}
	if _, err := ParseEcho("skip"); err == nil {
		t.Errorf("ParseEcho(%q) = nil error, want one", "skip")
	}
}
