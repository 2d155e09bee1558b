// Package shard splits a run between processes. Shard i of n takes the
// items whose key hashes to i (Of), so the split does not depend on the
// order of the input, an item keeps its shard when others are added, and a
// re-run of one shard takes exactly the items it took before.
//
// A process learns its shard from --shard i/n, or else from the scheduler
// that started it: a Kubernetes Indexed Job (JOB_COMPLETION_INDEX) or a
// Slurm job array (SLURM_ARRAY_TASK_ID). See docs/scale.md.
package shard

import (
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
)

// Shard is part Index of Count (0 <= Index < Count).
type Shard struct{ Index, Count int }

// All is the whole run.
var All = Shard{0, 1}

// Parse reads "i/n". An empty string means the shard the scheduler gave
// the process (FromEnv), and the whole run outside a scheduler's array.
func Parse(s string) (Shard, error) {
	if s == "" {
		return FromEnv(os.Getenv)
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want i/n with 0 <= i < n", s)
	}
	return Shard{i, n}, nil
}

// FromEnv is the shard of a task of a scheduler's array, read through
// getenv:
//
//   - a Kubernetes Indexed Job sets JOB_COMPLETION_INDEX; the pod template
//     passes the job's completions as JOB_COMPLETIONS (the downward API
//     does not expose them): shard INDEX of COMPLETIONS.
//   - a Slurm job array sets SLURM_ARRAY_TASK_ID, _MIN, _MAX, _STEP and
//     _COUNT: shard (ID-MIN)/STEP of COUNT, so --array=0-3, 1-4 and
//     0-30:10 are all four shards. An array with gaps (--array=0,1,5) has
//     no such numbering and is refused, as is an ID off the step.
//
// Neither set is the whole run. The Kubernetes variables win when both are
// set (a Slurm allocation that runs a Kubernetes node is the only way).
func FromEnv(getenv func(string) string) (Shard, error) {
	if idx, n := getenv("JOB_COMPLETION_INDEX"), getenv("JOB_COMPLETIONS"); idx != "" && n != "" {
		s, err := Parse(idx + "/" + n)
		if err != nil {
			return Shard{}, fmt.Errorf("indexed job: JOB_COMPLETION_INDEX=%s, JOB_COMPLETIONS=%s: %w", idx, n, err)
		}
		return s, nil
	}
	if getenv("SLURM_ARRAY_TASK_ID") != "" {
		return slurm(getenv)
	}
	return All, nil
}

// slurm reads the shard of a Slurm array task.
func slurm(getenv func(string) string) (Shard, error) {
	names := []string{"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_STEP", "SLURM_ARRAY_TASK_COUNT"}
	v := make([]int, len(names))
	var have []string
	for i, name := range names {
		s := getenv(name)
		if s == "" {
			v[i] = -1
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return Shard{}, fmt.Errorf("slurm array: %s=%q is not a number", name, s)
		}
		v[i] = n
		have = append(have, name+"="+s)
	}
	id, lo, hi, step, count := v[0], v[1], v[2], v[3], v[4]
	desc := "slurm array task (" + strings.Join(have, ", ") + ")"
	if lo < 0 || hi < 0 {
		return Shard{}, fmt.Errorf("%s: SLURM_ARRAY_TASK_MIN and _MAX are not set; pass --shard i/n", desc)
	}
	if step < 1 {
		step = 1 // Slurm before 17.11 does not set it
	}
	span := (hi-lo)/step + 1
	if count < 0 {
		count = span
	}
	switch {
	case hi < lo || id < lo || id > hi:
		return Shard{}, fmt.Errorf("%s: the task id is outside the array", desc)
	case (hi-lo)%step != 0 || (id-lo)%step != 0 || count != span:
		return Shard{}, fmt.Errorf("%s: the array has gaps (%d tasks, not the %d of %d-%d:%d), so a task's shard cannot be told from its id; submit --array=0-%d, or pass --shard i/n", desc, count, span, lo, hi, step, count-1)
	}
	return Shard{(id - lo) / step, count}, nil
}

// Of is the shard, of n, that the item with this key belongs to: FNV-1a
// of the key modulo n. It depends on nothing else, which is what makes a
// re-run of one shard exact and lets cwm merge say which shard a missing
// item belongs to.
func Of(key string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return int(h.Sum64() % uint64(n))
}

// Has reports whether the item with this key belongs to the shard.
func (s Shard) Has(key string) bool {
	return s.Count <= 1 || Of(key, s.Count) == s.Index
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }
