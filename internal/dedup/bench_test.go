package dedup

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkDedup50k measures throughput on 50,000 synthetic trajectories
// (30 actions of about 10 words, 20% planted near-duplicates) in 50
// repositories of 1,000.
func BenchmarkDedup50k(b *testing.B) {
	s := synth(50000, 50, 0.2, 1)
	for b.Loop() {
		mustDedup(b, Dedup, s.items, Options{})
	}
	b.ReportMetric(float64(len(s.items))*float64(b.N)/b.Elapsed().Minutes(), "trajectories/min")
}

// BenchmarkExactVsLSH10k times ExactDedup and Dedup on the same 10,000
// items in the same iterations, so machine load affects both alike, and
// reports the speedup. With one group (one large repository) the baseline
// compares about 10,000²/2 pairs; with 10 groups of 1,000 a tenth of that.
func BenchmarkExactVsLSH10k(b *testing.B) {
	for _, groups := range []int{1, 10} {
		b.Run(fmt.Sprintf("groups=%d", groups), func(b *testing.B) {
			s := synth(10000, groups, 0.2, 2)
			var exact, lsh time.Duration
			n := 0
			for b.Loop() {
				t0 := time.Now()
				wantKept, _ := mustDedup(b, ExactDedup, s.items, Options{})
				t1 := time.Now()
				kept, _ := mustDedup(b, Dedup, s.items, Options{})
				exact, lsh, n = exact+t1.Sub(t0), lsh+time.Since(t1), n+1
				if !slices.Equal(kept, wantKept) {
					b.Fatalf("Dedup kept %d items, ExactDedup %d: the sets differ", len(kept), len(wantKept))
				}
			}
			b.ReportMetric(exact.Seconds()/float64(n), "exact-s/op")
			b.ReportMetric(lsh.Seconds()/float64(n), "lsh-s/op")
			b.ReportMetric(float64(exact)/float64(lsh), "speedup")
		})
	}
}
