package selection

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMajorityAgreesWithCWM: CWMShuffles equals Python's own shuffles,
// and MajorityExact on the shuffled, cut candidates selects what CWM's
// tts_majority_voting.py selected (patch, occurrences, and the majority of
// the outcomes, which the script reports as passing) for every instance
// of every run in testdata/reference.
func TestMajorityAgreesWithCWM(t *testing.T) {
	b, err := os.ReadFile("testdata/reference/cwm_majority.json")
	if err != nil {
		t.Fatal(err)
	}
	type sel struct {
		InstanceID  string `json:"instance_id"`
		ModelPatch  string `json:"model_patch"`
		Occurrences int    `json:"occurrences"`
		Passing     bool   `json:"passing"`
	}
	var v struct {
		Lines []struct {
			InstanceID string  `json:"instance_id"`
			Patch      *string `json:"patch"`
			Passing    bool    `json:"passing"`
		} `json:"lines"`
		Runs []struct {
			Name       string `json:"name"`
			MaxSamples int    `json:"max_samples"`
			Selected   []sel  `json:"selected"`
		} `json:"runs"`
		Shuffles map[string][][]int `json:"shuffles"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var order []string
	byID := map[string][]int{} // line indexes by instance, in file order
	for i, l := range v.Lines {
		if _, ok := byID[l.InstanceID]; !ok {
			order = append(order, l.InstanceID)
		}
		byID[l.InstanceID] = append(byID[l.InstanceID], i)
	}
	sizes := make([]int, len(order))
	for i, id := range order {
		sizes[i] = len(byID[id])
	}
	agree, total := 0, 0
	for seed, want := range v.Shuffles {
		if got := CWMShuffles(seed, sizes); !cmp.Equal(got, want) {
			t.Errorf("CWMShuffles(%q) differs from Python's: %s", seed, cmp.Diff(want, got))
		}
	}
	for _, run := range v.Runs {
		perms := CWMShuffles(run.Name, sizes)
		var got []sel
		for i, id := range order {
			var patches []string
			var outcomes []bool
			for _, p := range perms[i] {
				l := v.Lines[byID[id][p]]
				patch := ""
				if l.Patch != nil {
					patch = *l.Patch
				}
				patches, outcomes = append(patches, patch), append(outcomes, l.Passing)
			}
			if run.MaxSamples > 0 && len(patches) > run.MaxSamples {
				patches, outcomes = patches[:run.MaxSamples], outcomes[:run.MaxSamples]
			}
			w, n := MajorityExact(patches)
			if w < 0 {
				continue
			}
			pass := 0
			for j, p := range patches {
				if p == patches[w] && outcomes[j] {
					pass++
				}
			}
			got = append(got, sel{InstanceID: id, ModelPatch: patches[w], Occurrences: n, Passing: 2*pass > n})
		}
		total += len(run.Selected)
		want := map[string]sel{}
		for _, s := range run.Selected {
			want[s.InstanceID] = s
		}
		if len(got) != len(run.Selected) {
			t.Errorf("seed %q, max_samples %d: %d instances selected, CWM's script %d", run.Name, run.MaxSamples, len(got), len(run.Selected))
		}
		for _, g := range got {
			if g == want[g.InstanceID] {
				agree++
			} else {
				t.Errorf("seed %q, max_samples %d: %+v, CWM's script %+v", run.Name, run.MaxSamples, g, want[g.InstanceID])
			}
		}
	}
	t.Logf("CWM's majority voting: %d of %d selections agree (%d runs)", agree, total, len(v.Runs))
}

// TestShuffleRanks: the rank of each line is its place in CWMShuffles'
// permutation of its task, tasks counted in the order they first appear.
func TestShuffleRanks(t *testing.T) {
	var s shuffleSizes
	for _, id := range []string{"b", "a", "b", "c", "b", "a", "b"} {
		s.add(id)
	}
	perms := CWMShuffles("m", []int{4, 2, 1})
	ranks := s.ranks("m")
	for i, id := range []string{"b", "a", "c"} {
		for pos, line := range perms[i] {
			if ranks[id][line] != pos {
				t.Errorf("task %s line %d: rank %d, want %d (permutation %v)", id, line, ranks[id][line], pos, perms[i])
			}
		}
	}
}
