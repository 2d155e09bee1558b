package selection

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/task"
)

func TestRegressionPool(t *testing.T) {
	tk := &task.Task{FailToPass: []string{"f1", "f2"}, PassToPass: []string{"p1"}}
	passing := []string{"a", "f1", "p1", "b", "f2"}
	tests := []struct {
		set  string
		want []string
	}{
		{RegressionExisting, []string{"a", "p1", "b"}},
		{"", []string{"a", "p1", "b"}},
		{RegressionStrict, []string{"a", "b"}},
	}
	for _, tc := range tests {
		if got := RegressionPool(passing, tk, tc.set); !cmp.Equal(got, tc.want) {
			t.Errorf("RegressionPool(%q) = %v, want %v", tc.set, got, tc.want)
		}
	}
}
