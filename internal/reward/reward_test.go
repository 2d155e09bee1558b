package reward

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMappingReward(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	paper := Mapping{Kind: "cwm", Threshold: 0.5}
	code1 := Mapping{Kind: "cwm", Threshold: 0.5, Scale: 1}
	code2 := Mapping{Kind: "cwm", Threshold: 0.5, Scale: 2}
	high := Mapping{Kind: "cwm", Threshold: 0.8}
	binary := Mapping{Kind: "binary"}
	tests := []struct {
		name       string
		m          Mapping
		resolved   bool
		similarity *float64
		want       float64
	}{
		{"paper resolved", paper, true, f(0.1), 1},
		{"paper similar", paper, false, f(0.5), 0},
		{"paper dissimilar", paper, false, f(0.4999), -1},
		{"paper no similarity", paper, false, nil, -1},
		{"paper resolved without similarity", paper, true, nil, 1},
		{"higher threshold", high, false, f(0.7), -1},
		{"code scale 1 resolved", code1, true, f(0), 0},
		{"code scale 1 similar", code1, false, f(0.9), -0.5},
		{"code scale 2 resolved", code2, true, f(0), 1},
		{"code scale 2 similar", code2, false, f(0.5), 0},
		{"code scale 2 dissimilar", code2, false, f(0.2), -1},
		{"binary resolved", binary, true, f(0), 1},
		{"binary similar", binary, false, f(1), 0},
	}
	for _, tt := range tests {
		if got := tt.m.Reward(tt.resolved, tt.similarity); got != tt.want {
			t.Errorf("%s: %+v.Reward(%v, %v) = %v, want %v", tt.name, tt.m, tt.resolved, tt.similarity, got, tt.want)
		}
	}
}

func TestMappingValidate(t *testing.T) {
	tests := []struct {
		m    Mapping
		ok   bool
		want float64 // threshold after Validate
	}{
		{Mapping{Kind: "cwm"}, true, 0.5},
		{Mapping{Kind: "binary", Threshold: 0.7}, true, 0.7},
		{Mapping{Kind: "sparse"}, false, 0},
		{Mapping{Kind: "cwm", Threshold: 1.5}, false, 0},
		{Mapping{Kind: "cwm", Scale: -1}, false, 0},
	}
	for _, tt := range tests {
		m := tt.m
		err := m.Validate()
		if (err == nil) != tt.ok || (tt.ok && m.Threshold != tt.want) {
			t.Errorf("%+v.Validate() = %v, threshold %v; want ok %v, threshold %v", tt.m, err, m.Threshold, tt.ok, tt.want)
		}
	}
}

func TestAdvantages(t *testing.T) {
	tests := []struct {
		rewards, want []float64
	}{
		// A GRPO group of 4 samples: mean -0.25.
		{[]float64{1, -1, 0, -1}, []float64{1.25, -0.75, 0.25, -0.75}},
		{[]float64{1, 1, 1, 1}, []float64{0, 0, 0, 0}},
		{[]float64{0.5}, []float64{0}},
		{nil, nil},
	}
	for _, tt := range tests {
		if got := Advantages(tt.rewards); !cmp.Equal(got, tt.want) {
			t.Errorf("Advantages(%v) = %v, want %v", tt.rewards, got, tt.want)
		}
	}
}
