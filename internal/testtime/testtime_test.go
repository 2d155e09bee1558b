package testtime

import (
	"testing"
	"time"
)

func TestScale(t *testing.T) {
	for _, tt := range []struct {
		env  string
		d    time.Duration
		want time.Duration
	}{
		{"", 10 * time.Second, 10 * time.Second},
		{"1", 10 * time.Second, 10 * time.Second},
		{"20", 10 * time.Second, 200 * time.Second},
		{"2.5", 2 * time.Second, 5 * time.Second},
		{"0.5", 10 * time.Second, 10 * time.Second}, // never tighter
		{"fast", 10 * time.Second, 10 * time.Second},
	} {
		t.Setenv(Env, tt.env)
		if got := Scale(tt.d); got != tt.want {
			t.Errorf("Scale(%v) with %s=%q = %v, want %v", tt.d, Env, tt.env, got, tt.want)
		}
	}
}
