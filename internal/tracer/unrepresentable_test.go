package tracer

import (
	"strings"
	"testing"
)

func TestUnrepresentable(t *testing.T) {
	for code, want := range map[string]string{
		"def f():\n    return '<|frame_sep|>'\n": "special token <|frame_sep|>",
		"def main():\n    pass\n":                "defines main",
		"def f():\n    return 1\n":               "",
	} {
		got := unrepresentable(code)
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("unrepresentable(%q) = %q, want %q", code, got, want)
		}
	}
}
