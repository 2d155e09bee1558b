package eval

import (
	"strconv"
	"strings"

	"cwm/internal/trace"
)

// maxAlignCells bounds the dynamic programme of Align (frames of the
// prediction times frames of the truth); longer pairs are aligned by
// position.
const maxAlignCells = 16 << 20

// Align pairs the frames of a prediction with those of the truth by a
// longest common subsequence of their actions (event and source line):
// frames the prediction inserted or dropped are left unpaired, so that one
// slip does not make every later frame a mismatch. pairs[j] is the index
// of the predicted frame paired with truth frame j, or -1. When the
// product of the lengths passes maxAlignCells it pairs by position and
// says so (positional).
func Align(pred, truth []trace.Frame) (pairs []int, positional bool) {
	n, m := len(pred), len(truth)
	pairs = make([]int, m)
	for j := range pairs {
		pairs[j] = -1
	}
	if n*m > maxAlignCells {
		for j := range min(n, m) {
			pairs[j] = j
		}
		return pairs, true
	}
	same := func(i, j int) bool { return pred[i].Event == truth[j].Event && pred[i].Source == truth[j].Source }
	// l[i][j] is the LCS length of pred[i:] and truth[j:].
	w := m + 1
	l := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			switch {
			case same(i, j):
				l[i*w+j] = l[(i+1)*w+j+1] + 1
			case l[(i+1)*w+j] >= l[i*w+j+1]:
				l[i*w+j] = l[(i+1)*w+j]
			default:
				l[i*w+j] = l[i*w+j+1]
			}
		}
	}
	for i, j := 0, 0; i < n && j < m; {
		switch {
		case same(i, j):
			pairs[j] = i
			i++
			j++
		case l[(i+1)*w+j] >= l[i*w+j+1]:
			i++
		default:
			j++
		}
	}
	return pairs, false
}

// Value kinds of ValueKind.
const (
	KindInt       = "int"
	KindFloat     = "float"
	KindBool      = "bool"
	KindNone      = "none"
	KindStr       = "str"
	KindContainer = "container"
	KindOther     = "other"
)

// ValueKinds lists the kinds in the order reports show them.
var ValueKinds = []string{KindInt, KindFloat, KindBool, KindNone, KindStr, KindContainer, KindOther}

// ValueKind classifies a value by its repr: int, float, bool, none, str
// (and bytes), container (list, tuple, dict, set, frozenset), or other
// (objects, functions, iterators).
func ValueKind(repr string) string {
	switch {
	case repr == "None":
		return KindNone
	case repr == "True" || repr == "False":
		return KindBool
	case repr == "":
		return KindOther
	}
	if _, err := strconv.ParseInt(repr, 10, 64); err == nil || isDigits(strings.TrimPrefix(repr, "-")) {
		return KindInt
	}
	if _, err := strconv.ParseFloat(repr, 64); err == nil || repr == "inf" || repr == "-inf" || repr == "nan" {
		return KindFloat
	}
	switch c := repr[0]; {
	case c == '\'' || c == '"' || strings.HasPrefix(repr, "b'") || strings.HasPrefix(repr, "b\""):
		return KindStr
	case c == '[' || c == '(' || c == '{' || strings.HasPrefix(repr, "set(") || strings.HasPrefix(repr, "frozenset("):
		return KindContainer
	}
	return KindOther
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
