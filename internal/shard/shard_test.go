package shard

import (
	"fmt"
	"hash/fnv"
	"strings"
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
		for _, v := range slurmVars {
			t.Setenv(v, "")
		}
		t.Setenv("JOB_COMPLETION_INDEX", c.index)
		t.Setenv("JOB_COMPLETIONS", c.completions)
		got, err := Parse(c.flag)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("Parse(%q) with job %q of %q = %v, %v; want %v, ok %v", c.flag, c.index, c.completions, got, err, c.want, c.ok)
		}
	}
}

var slurmVars = []string{"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_STEP", "SLURM_ARRAY_TASK_COUNT"}

// TestSlurm reads shards from the variables Slurm sets in a job array's
// tasks (sbatch(1), OUTPUT ENVIRONMENT VARIABLES).
func TestSlurm(t *testing.T) {
	cases := []struct {
		name             string
		id, lo, hi, step string
		count            string
		want             Shard
		err              string
	}{
		{"0-3", "2", "0", "3", "1", "4", Shard{2, 4}, ""},
		{"1-4", "1", "1", "4", "1", "4", Shard{0, 4}, ""},
		{"0-30:10", "20", "0", "30", "10", "4", Shard{2, 4}, ""},
		{"5-5", "5", "5", "5", "1", "1", Shard{0, 1}, ""},
		{"no step, no count (old Slurm)", "3", "0", "3", "", "", Shard{3, 4}, ""},
		{"0,1,5", "5", "0", "5", "1", "3", Shard{}, "the array has gaps"},
		{"0-30:10 id off the step", "15", "0", "30", "10", "4", Shard{}, "the array has gaps"},
		{"id outside", "9", "0", "3", "1", "4", Shard{}, "outside the array"},
		{"no min", "2", "", "3", "1", "4", Shard{}, "_MIN and _MAX are not set"},
		{"not a number", "x", "0", "3", "1", "4", Shard{}, "is not a number"},
	}
	for _, c := range cases {
		env := map[string]string{"SLURM_ARRAY_TASK_ID": c.id, "SLURM_ARRAY_TASK_MIN": c.lo, "SLURM_ARRAY_TASK_MAX": c.hi,
			"SLURM_ARRAY_TASK_STEP": c.step, "SLURM_ARRAY_TASK_COUNT": c.count}
		got, err := FromEnv(func(k string) string { return env[k] })
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: FromEnv = %v, %v; want an error containing %q", c.name, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: FromEnv = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	// The flag wins over the array; the indexed job over Slurm.
	for _, v := range slurmVars {
		t.Setenv(v, "")
	}
	t.Setenv("SLURM_ARRAY_TASK_ID", "1")
	t.Setenv("SLURM_ARRAY_TASK_MIN", "0")
	t.Setenv("SLURM_ARRAY_TASK_MAX", "3")
	t.Setenv("JOB_COMPLETION_INDEX", "")
	if got, err := Parse(""); err != nil || got != (Shard{1, 4}) {
		t.Errorf("Parse(\"\") in array task 1 of 0-3 = %v, %v; want 1/4", got, err)
	}
	if got, err := Parse("0/2"); err != nil || got != (Shard{0, 2}) {
		t.Errorf("Parse(\"0/2\") in an array task = %v, %v; want 0/2", got, err)
	}
	t.Setenv("JOB_COMPLETION_INDEX", "5")
	t.Setenv("JOB_COMPLETIONS", "8")
	if got, err := Parse(""); err != nil || got != (Shard{5, 8}) {
		t.Errorf("Parse(\"\") with both = %v, %v; want the indexed job's 5/8", got, err)
	}
}

// TestOf checks that Has is Of, and that Of is FNV-1a: shards written by
// earlier versions keep their items.
func TestOf(t *testing.T) {
	for _, c := range []struct {
		key  string
		n    int
		want int
	}{{"a", 1, 0}, {"a", 0, 0}, {"", 1, 0}} {
		if got := Of(c.key, c.n); got != c.want {
			t.Errorf("Of(%q, %d) = %d, want %d", c.key, c.n, got, c.want)
		}
	}
	h := fnv.New64a()
	h.Write([]byte("textkit.case.snake_case"))
	if got, want := Of("textkit.case.snake_case", 7), int(h.Sum64()%7); got != want {
		t.Errorf("Of = %d, want FNV-1a mod 7 = %d", got, want)
	}
	for i := range 7 {
		if got := (Shard{i, 7}).Has("textkit.case.snake_case"); got != (i == Of("textkit.case.snake_case", 7)) {
			t.Errorf("Shard{%d, 7}.Has = %v, disagrees with Of", i, got)
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
