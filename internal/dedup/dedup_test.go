package dedup

import (
	"hash/maphash"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustDedup(t testing.TB, f func([]Item, Options) ([]int, []Dropped, error), items []Item, o Options) ([]int, []Dropped) {
	t.Helper()
	kept, dropped, err := f(items, o)
	if err != nil {
		t.Fatal(err)
	}
	return kept, dropped
}

// TestDedupMatchesExact is the LSH guarantee on planted data: Dedup keeps
// exactly what the all-pairs baseline keeps, and the data really puts
// planted pairs on both sides of the threshold.
func TestDedupMatchesExact(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, seed := range seeds {
		s := synth(2000, 8, 0.4, seed)
		o := Options{Seed: seed}
		kept, dropped := mustDedup(t, Dedup, s.items, o)
		wantKept, wantDropped := mustDedup(t, ExactDedup, s.items, o)
		if diff := cmp.Diff(wantKept, kept); diff != "" {
			t.Errorf("seed %d: Dedup kept differs from ExactDedup (-exact +lsh):\n%s", seed, diff)
		}
		if diff := cmp.Diff(wantDropped, dropped); diff != "" {
			t.Errorf("seed %d: Dedup dropped differs from ExactDedup (-exact +lsh):\n%s", seed, diff)
		}

		// How hard was it? Count planted pairs just below and above 0.5.
		var below, above int
		for j, src := range s.source {
			if src < 0 {
				continue
			}
			jac := naiveJaccard(s.items[src].Text, s.items[j].Text, 5)
			switch {
			case jac >= 0.4 && jac < 0.5:
				below++
			case jac >= 0.5 && jac < 0.6:
				above++
			}
		}
		t.Logf("seed %d: kept %d, dropped %d; planted pairs in [0.4,0.5): %d, [0.5,0.6): %d", seed, len(kept), len(dropped), below, above)
		if below < 20 || above < 20 || len(dropped) < 100 {
			t.Errorf("seed %d: synthetic data too easy: %d planted pairs just below, %d just above, %d dropped", seed, below, above, len(dropped))
		}
		checkKeptBelow(t, s.items, kept, 0.5)
	}
}

// checkKeptBelow checks the guarantee independently of the package's
// hashing: shingles are word tuples hashed with a randomly seeded maphash,
// so no two kept items of a group may reach the threshold.
func checkKeptBelow(t *testing.T, items []Item, kept []int, thr float64) {
	t.Helper()
	seed := maphash.MakeSeed()
	sets := make([][]uint64, len(items))
	for _, i := range kept {
		for s := range wordShingles(items[i].Text, 5) {
			sets[i] = append(sets[i], maphash.String(seed, s))
		}
		slices.Sort(sets[i])
	}
	for x, i := range kept {
		for _, j := range kept[x+1:] {
			if items[i].Group != items[j].Group {
				continue
			}
			inter := 0
			for a, b := sets[i], sets[j]; len(a) > 0 && len(b) > 0; {
				switch {
				case a[0] < b[0]:
					a = a[1:]
				case a[0] > b[0]:
					b = b[1:]
				default:
					inter++
					a, b = a[1:], b[1:]
				}
			}
			union := len(sets[i]) + len(sets[j]) - inter
			if union == 0 || float64(inter)/float64(union) >= thr {
				t.Fatalf("kept %s and %s of group %s have %d of %d shingles in common, Jaccard >= %v", items[i].ID, items[j].ID, items[i].Group, inter, union, thr)
			}
		}
	}
}

// wordShingles is the reference shingling: the set of k-word tuples as
// strings.
func wordShingles(text string, k int) map[string]bool {
	w := strings.Fields(text)
	set := map[string]bool{}
	if len(w) == 0 {
		return set
	}
	for i := 0; i+k <= len(w) || i == 0; i++ {
		set[strings.Join(w[i:min(i+k, len(w))], "\x00")] = true
	}
	return set
}

func setJaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for s := range a {
		if b[s] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

func naiveJaccard(a, b string, k int) float64 {
	return setJaccard(wordShingles(a, k), wordShingles(b, k))
}

func TestKeepRule(t *testing.T) {
	base := "open file src/app.py then edit line 10 to return x plus one and run pytest tests again now"
	words := strings.Fields(base)
	// variant replaces word i; a single changed word alters up to 5 of the
	// 14 shingles, similarity 9/19 (below 0.5) in the middle of the text
	// and 13/15 at its end.
	variant := func(i int, w string) string {
		v := slices.Clone(words)
		v[i] = w
		return strings.Join(v, " ")
	}
	tests := []struct {
		name        string
		items       []Item
		wantKept    []int
		wantDropped []Dropped
	}{
		{
			name:     "identical in one group",
			items:    []Item{{"a", "r", base}, {"b", "r", base}},
			wantKept: []int{0}, wantDropped: []Dropped{{"b", "a", 1}},
		},
		{
			name:     "identical in different groups",
			items:    []Item{{"a", "r1", base}, {"b", "r2", base}},
			wantKept: []int{0, 1},
		},
		{
			name:     "whitespace does not matter",
			items:    []Item{{"a", "r", base}, {"b", "r", "  " + strings.ReplaceAll(base, " ", "\n\t ") + "\n"}},
			wantKept: []int{0}, wantDropped: []Dropped{{"b", "a", 1}},
		},
		{
			name:     "edit at the end is a duplicate, in the middle not",
			items:    []Item{{"a", "r", base}, {"b", "r", variant(len(words)-1, "later")}, {"c", "r", variant(8, "three")}},
			wantKept: []int{0, 2}, wantDropped: []Dropped{{"b", "a", 13.0 / 15}},
		},
		{
			name: "duplicate of a dropped item only is kept",
			// b is dropped as a duplicate of a; c resembles b but not a,
			// and b is not kept, so c stays.
			items: []Item{
				{"a", "r", "one two three four five six seven eight nine ten"},
				{"b", "r", "one two three four five six seven eight nine ten eleven twelve"},
				{"c", "r", "four five six seven eight nine ten eleven twelve"},
			},
			wantKept: []int{0, 2}, wantDropped: []Dropped{{"b", "a", 6.0 / 8}},
		},
		{
			name:     "first kept match is reported",
			items:    []Item{{"a", "r", base + " x"}, {"b", "r", "unrelated words only here"}, {"c", "r", base}, {"d", "r", base}},
			wantKept: []int{0, 1}, wantDropped: []Dropped{{"c", "a", 14.0 / 15}, {"d", "a", 14.0 / 15}},
		},
		{
			name:     "short and empty texts",
			items:    []Item{{"a", "r", "ls"}, {"b", "r", "ls"}, {"c", "r", "ls -la"}, {"d", "r", ""}, {"e", "r", " \n"}},
			wantKept: []int{0, 2, 3}, wantDropped: []Dropped{{"b", "a", 1}, {"e", "d", 1}},
		},
		{
			name:     "no items",
			items:    nil,
			wantKept: []int{},
		},
	}
	for _, tt := range tests {
		for name, f := range map[string]func([]Item, Options) ([]int, []Dropped, error){"Dedup": Dedup, "ExactDedup": ExactDedup} {
			kept, dropped := mustDedup(t, f, tt.items, Options{})
			if !cmp.Equal(kept, tt.wantKept) || !cmp.Equal(dropped, tt.wantDropped) {
				t.Errorf("%s: %s = %v, %v, want %v, %v", tt.name, name, kept, dropped, tt.wantKept, tt.wantDropped)
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	s := synth(1500, 5, 0.3, 9)
	kept1, dropped1 := mustDedup(t, Dedup, s.items, Options{Seed: 42})
	prev := runtime.GOMAXPROCS(1)
	kept2, dropped2 := mustDedup(t, Dedup, s.items, Options{Seed: 42})
	runtime.GOMAXPROCS(prev)
	if !cmp.Equal(kept1, kept2) || !cmp.Equal(dropped1, dropped2) {
		t.Error("Dedup results differ between GOMAXPROCS settings")
	}
}

func TestOptionsErrors(t *testing.T) {
	for _, o := range []Options{
		{Threshold: 1.5}, {Threshold: -0.1}, {Threshold: math.NaN()},
		{Shingle: -1}, {NumHashes: 100, Bands: 64}, {Bands: -2},
	} {
		if _, _, err := Dedup(nil, o); err == nil {
			t.Errorf("Dedup(nil, %+v) error = nil, want an error", o)
		}
		if _, _, err := ExactDedup(nil, o); err == nil {
			t.Errorf("ExactDedup(nil, %+v) error = nil, want an error", o)
		}
	}
}

func TestShingles(t *testing.T) {
	tests := []struct {
		a, b string
		k    int
		same bool
	}{
		{"a b c d e f", "a  b\tc\nd e f\n", 5, true},
		{"a b c d e f", "a b c d e f g", 5, false},
		{"é ü\u00a0ß", "é ü ß", 2, true}, // U+00A0 is a space, as in strings.Fields
		{"a b", "b a", 5, false},         // a short text is one ordered shingle
		{"", " \n\t", 5, true},
	}
	for _, tt := range tests {
		a, _ := shingles(tt.a, tt.k, nil)
		b, _ := shingles(tt.b, tt.k, nil)
		if got := slices.Equal(a, b); got != tt.same {
			t.Errorf("shingles(%q) == shingles(%q) is %v, want %v", tt.a, tt.b, got, tt.same)
		}
		if want := len(wordShingles(tt.a, tt.k)); len(a) != want {
			t.Errorf("len(shingles(%q, %d)) = %d, want %d", tt.a, tt.k, len(a), want)
		}
	}
}

// TestJaccardAtLeast checks the early exit never changes a decision,
// against a plain count, on random sets near the threshold.
func TestJaccardAtLeast(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for range 20000 {
		a, b := randomSet(r, r.IntN(60)), randomSet(r, r.IntN(60))
		if r.IntN(2) == 0 {
			b = append(b, a[:r.IntN(len(a)+1)]...) // overlap
			slices.Sort(b)
			b = slices.Compact(b)
		}
		thr := []float64{0.5, 0.3, 0.7, 1, 0.01}[r.IntN(5)]
		inter := 0
		for _, x := range a {
			if _, ok := slices.BinarySearch(b, x); ok {
				inter++
			}
		}
		want := 1.0
		if len(a)+len(b) > 0 {
			want = float64(inter) / float64(len(a)+len(b)-inter)
		}
		got, ok := jaccardAtLeast(a, b, thr)
		if ok != (want >= thr) || (ok && got != want) {
			t.Fatalf("jaccardAtLeast(%d elems, %d elems, %v) = %v, %v, want %v, %v", len(a), len(b), thr, got, ok, want, want >= thr)
		}
	}
}

func randomSet(r *rand.Rand, n int) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = r.Uint64N(100)
	}
	slices.Sort(s)
	return slices.Compact(s)
}

// TestMinHashEstimates checks that the multiply-add family behaves like
// independent permutations: per hash, signatures agree with probability J,
// and per band of two rows with probability J².
func TestMinHashEstimates(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	f := newFamily(Options{NumHashes: 128, Bands: 64})
	sigA, sigB := make([]uint64, 128), make([]uint64, 128)
	keysA, keysB := make([]uint64, 64), make([]uint64, 64)
	var errSum, bandErrSum float64
	const pairs = 400
	for range pairs {
		// Two sets of 300 shingle hashes sharing a random number of them.
		shared := r.IntN(301)
		a, b := make([]uint64, 0, 300), make([]uint64, 0, 300)
		for i := range 300 {
			x := r.Uint64()
			a = append(a, x)
			if i < shared {
				b = append(b, x)
			} else {
				b = append(b, r.Uint64())
			}
		}
		jac := float64(shared) / float64(600-shared)
		f.signature(a, sigA)
		f.signature(b, sigB)
		f.bandKeys(sigA, keysA)
		f.bandKeys(sigB, keysB)
		eq, bandEq := 0, 0
		for i := range sigA {
			if sigA[i] == sigB[i] {
				eq++
			}
		}
		for i := range keysA {
			if keysA[i] == keysB[i] {
				bandEq++
			}
		}
		errSum += float64(eq)/128 - jac
		bandErrSum += float64(bandEq)/64 - jac*jac
	}
	if bias := errSum / pairs; math.Abs(bias) > 0.01 {
		t.Errorf("mean (agreeing hashes - Jaccard) = %.4f, want |bias| <= 0.01", bias)
	}
	if bias := bandErrSum / pairs; math.Abs(bias) > 0.01 {
		t.Errorf("mean (agreeing bands - Jaccard²) = %.4f, want |bias| <= 0.01", bias)
	}
}

func TestMissProbability(t *testing.T) {
	tests := []struct {
		j               float64
		hashes, bands   int
		want, tolerance float64
	}{
		{0.5, 128, 64, 1.01e-8, 0.01e-8},
		{0.6, 128, 64, 3.94e-13, 0.01e-13},
		{1, 128, 64, 0, 0},
		{0, 128, 64, 1, 0},
		{0.5, 128, 32, 0.1268, 0.0001},
	}
	for _, tt := range tests {
		if got := MissProbability(tt.j, tt.hashes, tt.bands); math.Abs(got-tt.want) > tt.tolerance {
			t.Errorf("MissProbability(%v, %d, %d) = %.4g, want %.4g", tt.j, tt.hashes, tt.bands, got, tt.want)
		}
	}
}
