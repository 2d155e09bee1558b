package env

import (
	"fmt"
	"testing"

	"cwm/internal/testrun"
)

// BenchmarkList lists a store of 20 environments whose suites have 20,000
// tests each: List, which env ls runs, reads env.json alone; the baseline
// is what it read too before the baseline moved out of env.json (Get on
// each, which reads baseline.json as well).
//
//	go test -run '^$' -bench List ./internal/env
func BenchmarkList(b *testing.B) {
	st := NewStore(b.TempDir())
	var tests []TestResult
	for i := range 20000 {
		tests = append(tests, TestResult{ID: fmt.Sprintf("tests/test_m%d.py::test_%d", i/100, i), Status: "pass",
			Outcomes: []testrun.Outcome{"pass", "pass", "pass"}, Seconds: []float64{0.0123, 0.0119, 0.0121}})
	}
	for i := range 20 {
		stg, err := st.NewStage()
		if err != nil {
			b.Fatal(err)
		}
		e := stg.Env()
		e.ID, e.Name, e.Base, e.Usable, e.Baseline = fmt.Sprintf("e%02d", i), "big", "host", true, tests
		if err := stg.Publish(false); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("List", func(b *testing.B) {
		for b.Loop() {
			if all, err := st.List(); err != nil || len(all) != 20 {
				b.Fatal(len(all), err)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		for b.Loop() {
			all, _ := st.List()
			for _, e := range all {
				if st.Get(e.ID) == nil {
					b.Fatal(e.ID)
				}
			}
		}
	})
}
