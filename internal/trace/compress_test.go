package trace

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCompress(t *testing.T) {
	tests := []struct {
		name       string
		full, want []Frame
	}{
		{
			name: "changed values stay, unchanged become ..",
			full: []Frame{call(0, "c", "a", "1"), line(0, "l1", "a", "1", "b", "2"), line(0, "l2", "a", "5", "b", "2")},
			want: []Frame{call(0, "c", "a", "1"), line(0, "l1", "a", "..", "b", "2"), line(0, "l2", "a", "5", "b", "..")},
		},
		{
			name: "a call frame shows values in full",
			full: []Frame{call(0, "c", "a", "1"), line(0, "l", "a", "1"), call(1, "d", "a", "1"), line(1, "m", "a", "1")},
			want: []Frame{call(0, "c", "a", "1"), line(0, "l", "a", ".."), call(1, "d", "a", "1"), line(1, "m", "a", "..")},
		},
		{
			name: "the caller restates after a nested return",
			full: []Frame{
				call(0, "c", "a", "1"), line(0, "l1", "a", "1"),
				call(1, "d"), ret(1, "d", "None"),
				line(0, "l2", "a", "1"), line(0, "l3", "a", "1"),
			},
			want: []Frame{
				call(0, "c", "a", "1"), line(0, "l1", "a", ".."),
				call(1, "d"), ret(1, "d", "None"),
				line(0, "l2", "a", "1"), line(0, "l3", "a", ".."),
			},
		},
		{
			name: "an exception caught in the same scope is no boundary",
			full: []Frame{call(0, "c", "a", "1"), line(0, "l1", "a", "1"), exc(0, "l1", "E"), line(0, "l2", "a", "1")},
			want: []Frame{call(0, "c", "a", "1"), line(0, "l1", "a", ".."), exc(0, "l1", "E"), line(0, "l2", "a", "..")},
		},
		{
			name: "compared with the previous frame only",
			full: []Frame{call(0, "c", "a", "1"), line(0, "l1"), line(0, "l2", "a", "1")},
			want: []Frame{call(0, "c", "a", "1"), line(0, "l1"), line(0, "l2", "a", "1")},
		},
		{
			name: "outside any scope nothing is compressed",
			full: []Frame{line(-1, "l", "a", "1"), line(-1, "l", "a", "1")},
			want: []Frame{line(-1, "l", "a", "1"), line(-1, "l", "a", "1")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := cloneFrames(tc.full)
			got := Compress(in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Compress() mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.full, in); diff != "" {
				t.Errorf("Compress() modified its input (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(got, Compress(got)); diff != "" {
				t.Errorf("Compress() is not idempotent (-once +twice):\n%s", diff)
			}
			if diff := cmp.Diff(tc.full, Expand(got)); diff != "" {
				t.Errorf("Expand(Compress()) mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	tests := []struct {
		name     string
		in, want []Frame
	}{
		{
			// The reference consumer walks back to the last value, not
			// only to the previous frame.
			name: "resolves past a frame without the local",
			in:   []Frame{call(0, "c", "a", "1"), line(0, "l1"), line(0, "l2", "a", "..")},
			want: []Frame{call(0, "c", "a", "1"), line(0, "l1"), line(0, "l2", "a", "1")},
		},
		{
			name: "does not resolve across a nested return",
			in:   []Frame{call(0, "c", "a", "1"), call(1, "d"), ret(1, "d", "None"), line(0, "l", "a", "..")},
			want: []Frame{call(0, "c", "a", "1"), call(1, "d"), ret(1, "d", "None"), line(0, "l", "a", "..")},
		},
		{
			name: "does not resolve into the caller",
			in:   []Frame{call(0, "c", "a", "1"), call(1, "d"), line(1, "l", "a", "..")},
			want: []Frame{call(0, "c", "a", "1"), call(1, "d"), line(1, "l", "a", "..")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Expand(tc.in)); diff != "" {
				t.Errorf("Expand() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func cloneFrames(frames []Frame) []Frame {
	out := make([]Frame, len(frames))
	for i, f := range frames {
		f.Locals = cloneLocals(f.Locals)
		out[i] = f
	}
	return out
}
