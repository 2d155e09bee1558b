package tracer

import (
	"math"
	"strconv"
	"strings"
)

// OutputsMatch reports whether a program's stdout is the expected output
// as CodeContests judges it (OutputsMatch in google-deepmind/code_contests,
// execution/tester_sandboxer.cc): both are split into tokens at spaces,
// newlines, tabs, carriage returns and vertical tabs, empty tokens dropped,
// and lower-cased (ASCII); equal token lists match; otherwise lists of the
// same length match when every pair of tokens does: two numbers within
// 1e-5 of each other, or equal strings. So "1 2\n" matches "1\n2", "YES"
// matches "yes" and "0.333333" matches "0.3333333".
func OutputsMatch(output, expected string) bool {
	got, want := outputTokens(output), outputTokens(expected)
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !tokensMatch(got[i], want[i]) {
			return false
		}
	}
	return true
}

// outputTokens splits at CodeContests' white space (absl::ByAnyChar(" \n\t\r\v"),
// empty parts skipped) and lower-cases ASCII letters (absl::AsciiStrToLower).
func outputTokens(s string) []string {
	parts := strings.FieldsFunc(s, func(r rune) bool {
		return r == ' ' || r == '\n' || r == '\t' || r == '\r' || r == '\v'
	})
	for i, p := range parts {
		parts[i] = asciiLower(p)
	}
	return parts
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// tokensMatch is CodeContests' ValuesMatch: a token that is not a number
// compares as a string; two numbers (every integer also parses as a
// double there, so integers too) match when they differ by less than 1e-5.
func tokensMatch(a, b string) bool {
	if a == b {
		return true
	}
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	if errA != nil || errB != nil {
		return false
	}
	return math.Abs(x-y) < 1e-5
}
