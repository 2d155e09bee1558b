package reward

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkRatio measures the character-level ratio on patch-like texts of
// growing size with about 5% of the lines edited, to show the quadratic
// cost that large patches carry (as they do in Python).
func BenchmarkRatio(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	words := strings.Fields("def return self if else for in not None import from class raise value x y items result")
	line := func() string {
		var s strings.Builder
		s.WriteString("+    ")
		for range 6 {
			s.WriteString(words[r.IntN(len(words))] + " ")
		}
		return s.String()
	}
	for _, size := range []int{2 << 10, 20 << 10} {
		var a, c []string
		for n := 0; n < size; n += len(a[len(a)-1]) + 1 {
			a = append(a, line())
			if r.IntN(20) == 0 {
				c = append(c, line())
			} else {
				c = append(c, a[len(a)-1])
			}
		}
		x, y := strings.Join(a, "\n"), strings.Join(c, "\n")
		b.Run(fmt.Sprintf("chars=%d", len(x)), func(b *testing.B) {
			for b.Loop() {
				Ratio(x, y)
			}
		})
	}
}
