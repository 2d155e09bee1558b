package tracer

import "testing"

func TestTruncate(t *testing.T) {
	tests := []struct {
		s    string
		max  int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc<... 1 more chars>"},
		{"héllo wörld", 5, "héllo<... 6 more chars>"},
		{"ééé", 3, "ééé"}, // 6 bytes, 3 characters
		{"ééééé", 2, "éé<... 3 more chars>"},
	}
	for _, tt := range tests {
		if got := Truncate(tt.s, tt.max); got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.s, tt.max, got, tt.want)
		}
	}
}
