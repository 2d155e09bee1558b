package tracer

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDefBlock checks where the scanner ends a def block and which lines
// a context keeps around it, on the shapes that a scan by indentation
// alone gets wrong: a docstring or a string left of the body, a signature
// over several lines with its closing bracket at the def's indentation, a
// backslash continuation, comments at column 0 inside the body, a
// one-line def, and methods whose class header must come along.
func TestDefBlock(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		def  int   // the def line
		from int   // the block's first line (its first decorator)
		want []int // the lines selected, the block and its headers
	}{
		{"plain", `import os

def f(a):
    return a + 1

def g():
    pass`, 3, 3, []int{3, 4}},
		{"docstring at column 0", `def f():
    """Doc
at column 0
"""
    return 1
x = 2`, 1, 1, []int{1, 2, 3, 4, 5}},
		{"signature over lines", `def f(
    a,
    b,
) -> int:
    return a

y = 1`, 1, 1, []int{1, 2, 3, 4, 5}},
		{"comment at column 0 and trailing comments", `def f():
    a = 1
# a comment at column 0
    return a
# after the function

z = 3`, 1, 1, []int{1, 2, 3, 4}},
		{"backslash continuation", `def f():
    return 1 + \
2
w = 1`, 1, 1, []int{1, 2, 3}},
		{"one-line def", `def f(): return 1
def g(): return 2`, 1, 1, []int{1}},
		{"method with decorator", `import x

class A(Base):
    """A class."""

    attr = 1

    @property
    def f(self):
        s = "it's ( not a bracket"
        return self.attr
    def g(self):
        pass`, 9, 8, []int{3, 8, 9, 10, 11}},
		{"nested def", `class A:
    def f(self):
        def g(x):
            return [
    x]
        return g(1)
    def h(self):
        pass`, 3, 3, []int{1, 2, 3, 4, 5}},
		{"triple quote in a string", `def f():
    s = "'''"
    return s
v = 1`, 1, 1, []int{1, 2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &sourceFile{lines: strings.Split(tc.src, "\n")}
			sel := make([]bool, len(f.lines))
			f.selectRange(sel, tc.from, f.blockEnd(tc.def))
			var got []int
			for i, ok := range sel {
				if ok {
					got = append(got, i+1)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("selected lines (-want +got):\n%s", diff)
			}
		})
	}
}
