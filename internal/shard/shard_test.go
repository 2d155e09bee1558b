package shard

import (
	"fmt"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		flag, index, completions string
		want                     Shard
		ok                       bool
	}{
		{"", "", "", All, true},
		{"0/1", "", "", Shard{0, 1}, true},
		{"2/3", "", "", Shard{2, 3}, true},
		{"", "3", "8", Shard{3, 8}, true},
		{"1/2", "3", "8", Shard{1, 2}, true}, // the flag wins over the job
		{"", "8", "8", Shard{}, false},
		{"3/3", "", "", Shard{}, false},
		{"-1/2", "", "", Shard{}, false},
		{"1", "", "", Shard{}, false},
		{"a/b", "", "", Shard{}, false},
		{"0/0", "", "", Shard{}, false},
	}
	for _, c := range cases {
		t.Setenv("JOB_COMPLETION_INDEX", c.index)
		t.Setenv("JOB_COMPLETIONS", c.completions)
		got, err := Parse(c.flag)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("Parse(%q) with job %q of %q = %v, %v; want %v, ok %v", c.flag, c.index, c.completions, got, err, c.want, c.ok)
		}
	}
}

func TestHasPartitions(t *testing.T) {
	sizes := make([]int, 4)
	for k := 0; k < 1000; k++ {
		key := fmt.Sprintf("task-%d", k)
		n := 0
		for i := range 4 {
			if (Shard{i, 4}).Has(key) {
				n++
				sizes[i]++
			}
		}
		if n != 1 {
			t.Fatalf("key %q is in %d of 4 shards", key, n)
		}
		if !All.Has(key) {
			t.Fatalf("key %q is not in the whole run", key)
		}
	}
	for i, n := range sizes {
		if n < 150 || n > 350 {
			t.Errorf("shard %d/4 has %d of 1000 keys", i, n)
		}
	}
}
