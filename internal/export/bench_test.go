package export

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkExport measures an export of $CWM_EXPORT_BENCH_IN (a
// trajectories file, e.g. the one scripts/export-bench.py generates) to
// Parquet; without it, of 2,000 synthetic trajectories. The comparison
// against pyarrow is scripts/export-bench.py's (docs/benchmarks.md).
func BenchmarkExport(b *testing.B) {
	in := os.Getenv("CWM_EXPORT_BENCH_IN")
	if in == "" {
		in = writeTrajectories(&testing.T{}, b.TempDir(), 100, 20, 6)
	}
	st, err := os.Stat(in)
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(b.TempDir(), "out.parquet")
	b.SetBytes(st.Size())
	for b.Loop() {
		if _, err := Run(context.Background(), Options{Kind: SFT, In: []string{in}, Out: out}); err != nil {
			b.Fatal(err)
		}
	}
}
