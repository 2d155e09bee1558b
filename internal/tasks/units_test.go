package tasks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/env"
	"cwm/internal/env/envtest"
	"cwm/internal/mutate"
	"cwm/internal/shard"
	"cwm/internal/testrun"
)

func TestOwnerName(t *testing.T) {
	cases := []struct{ in, owner, name string }{
		{"django/django", "django", "django"},
		{"https://github.com/pallets/flask", "pallets", "flask"},
		{"https://github.com/pallets/flask.git/", "pallets", "flask"},
		{"git@github.com:psf/requests.git", "psf", "requests"},
		{"ssh://git@github.com/sympy/sympy", "sympy", "sympy"},
		{"github.com/Pydata/XArray", "pydata", "xarray"},
		{"/home/me/src/flask", "", ""},
		{"./flask", "", ""},
		{"flask", "", ""},
	}
	for _, c := range cases {
		o, n := ownerName(c.in)
		if o != c.owner || n != c.name {
			t.Errorf("ownerName(%q) = %q, %q, want %q, %q", c.in, o, n, c.owner, c.name)
		}
	}
}

func TestScrub(t *testing.T) {
	cases := []struct{ in, want string }{
		{"AssertionError: assert 3 == 2", "AssertionError: assert 3 == 2"},
		{`File "/repo/textkit/stats.py", line 12, in mean`, `File "<source>", in mean`},
		{"textkit/stats.py:12: in mean", "<source>: in mean"},
		{"tests/test_stats.py:40: AssertionError", "tests/test_stats.py: AssertionError"},
		{"NameError: name 'tokens' is not defined", "NameError: name 'tokens' is not defined"},
	}
	for _, c := range cases {
		if got := scrub(c.in); got != c.want {
			t.Errorf("scrub(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestProblemStatement(t *testing.T) {
	got := problemStatement([]string{"tests/t.py::a", "tests/t.py::b"}, map[string]testrun.Test{
		"tests/t.py::a": {ID: "tests/t.py::a", Outcome: testrun.Fail, Message: `File "/repo/pkg/m.py", line 3: ValueError: bad`},
		"tests/t.py::b": {ID: "tests/t.py::b", Outcome: testrun.Error},
	})
	want := "After a recent change, 2 of the repository's tests fail:\n\n" +
		"- tests/t.py::a\n  File \"<source>\": ValueError: bad\n- tests/t.py::b\n  error\n\n" +
		"The other tests still pass. Fix the code so that these tests pass again without breaking the others; the tests themselves are correct.\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problemStatement (-want +got):\n%s", diff)
	}
}

func TestBudget(t *testing.T) {
	e := &env.Env{
		Baseline: []env.TestResult{{ID: "a", Seconds: []float64{1, 2}}, {ID: "b", Seconds: []float64{0.5, 0.5}}},
		Runs:     []env.RunRecord{{Seconds: 3.5}, {Seconds: 3}},
	}
	b := newBudget(e, 2)
	cases := []struct {
		ids  []string
		want time.Duration
	}{
		{nil, 5*time.Second + 7*time.Second},                 // the slowest whole run
		{[]string{"a"}, 5*time.Second + 2*(1+2)*time.Second}, // overhead 1s + a's slowest 2s
		{[]string{}, 5*time.Second + 2*time.Second},          // the overhead alone: an import
		{[]string{"b", "x"}, 5*time.Second + 3*time.Second},  // an unknown test costs nothing
	}
	for _, c := range cases {
		if got := b.timeout(c.ids); got != c.want {
			t.Errorf("timeout(%v) = %v, want %v", c.ids, got, c.want)
		}
	}
}

func TestStableTests(t *testing.T) {
	e := &env.Env{Baseline: []env.TestResult{
		{ID: "a", Status: "pass"}, {ID: "b", Status: env.Flaky}, {ID: "c", Status: "pass"},
		{ID: "d", Status: "skip"}, {ID: "e", Status: "fail"},
	}}
	reps := []*testrun.Report{
		{Tests: []testrun.Test{{ID: "a", Outcome: testrun.Pass}, {ID: "b", Outcome: testrun.Pass}, {ID: "c", Outcome: testrun.Pass}}},
		{Tests: []testrun.Test{{ID: "a", Outcome: testrun.Pass}, {ID: "b", Outcome: testrun.Pass}, {ID: "c", Outcome: testrun.Fail}}},
	}
	stable, bad := stableTests(e, reps)
	if diff := cmp.Diff([]string{"a"}, stable); diff != "" {
		t.Errorf("stable tests (-want +got):\n%s", diff)
	}
	if !bad["c"] || bad["b"] {
		t.Errorf("unstable = %v, want c (b is flaky at baseline, never a candidate)", bad)
	}
}

func TestOrderInterleavesFamilies(t *testing.T) {
	var cands []*candidate
	for _, f := range mutate.Families {
		for i := 0; i < 3; i++ {
			cands = append(cands, &candidate{m: mutate.Mutant{Family: f}, key: f + string(rune('a'+i))})
		}
	}
	a := order(append([]*candidate(nil), cands...), 5)
	b := order(append([]*candidate(nil), cands...), 5)
	for i := range a {
		if a[i].key != b[i].key {
			t.Fatalf("order is not deterministic for a seed: %s vs %s at %d", a[i].key, b[i].key, i)
		}
	}
	first := map[string]bool{}
	for _, c := range a[:len(mutate.Families)] {
		first[c.m.Family] = true
	}
	if len(first) != len(mutate.Families) {
		t.Errorf("the first %d candidates are of families %v: the first round takes one of each", len(mutate.Families), first)
	}
}

// TestOrderOfAFunctionIgnoresTheShard checks what makes a sharded mutate
// run merge into the unsharded one: a function's candidates come in the
// same relative order whatever other functions' candidates are around
// them (a shard has all of a function's candidates and some others), so
// --per-function keeps the same ones.
func TestOrderOfAFunctionIgnoresTheShard(t *testing.T) {
	var all []*candidate
	for fn := 0; fn < 6; fn++ {
		for _, f := range mutate.Families {
			for i := 0; i < 4; i++ {
				all = append(all, &candidate{m: mutate.Mutant{Family: f}, fn: fmt.Sprintf("m.py::f%d", fn),
					key: fmt.Sprintf("%d-%s-%d", fn, f, i)})
			}
		}
	}
	of := func(cands []*candidate, fn string) []string {
		var keys []string
		for _, c := range order(append([]*candidate(nil), cands...), 9) {
			if c.fn == fn {
				keys = append(keys, c.key)
			}
		}
		return keys
	}
	want := of(all, "m.py::f2")
	for n := 2; n <= 4; n++ {
		var subset []*candidate // "shard" 0 of n by function, plus f2
		for _, c := range all {
			if c.fn == "m.py::f2" || shard.Of(c.fn, n) == 0 {
				subset = append(subset, c)
			}
		}
		if diff := cmp.Diff(want, of(subset, "m.py::f2")); diff != "" {
			t.Errorf("order of f2's candidates among %d of %d (-whole run +subset):\n%s", len(subset), len(all), diff)
		}
	}
}

func TestModuleName(t *testing.T) {
	layer := t.TempDir()
	writeFiles(t, filepath.Join(layer, "layer", "repo"), map[string]string{
		"pkg/__init__.py": "", "pkg/sub/__init__.py": "", "pkg/sub/m.py": "",
		"src/lib/__init__.py": "", "src/lib/x.py": "", "tool.py": "",
	})
	cases := []struct{ file, module, root string }{
		{"pkg/sub/m.py", "pkg.sub.m", "/repo"},
		{"pkg/sub/__init__.py", "pkg.sub", "/repo"},
		{"src/lib/x.py", "lib.x", "/repo/src"},
		{"tool.py", "tool", "/repo"},
		{"README.md", "", ""},
	}
	e := envtest.Put(t, t.TempDir(), "modules", filepath.Join(layer, "layer"))
	sb, err := testSandboxes.Open(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	for _, c := range cases {
		m, r, err := moduleName(context.Background(), sb, c.file)
		if err != nil || m != c.module || r != c.root {
			t.Errorf("moduleName(%q) = %q, %q; want %q, %q", c.file, m, r, c.module, c.root)
		}
	}
}

// TestDecontamination refuses a repository on the list by name or URL,
// and a fork of a listed repository by its root commit. CWM-SPEC section
// 3: "Repositories of the evaluation set (SWE-bench) and their forks are
// excluded (decontamination)."
func TestDecontamination(t *testing.T) {
	e, repo := calcEnv(t)
	ctx := context.Background()
	sb, err := testSandboxes.Open(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if err := DefaultExclusions().Check(ctx, sb, e); err != nil {
		t.Errorf("calc is not a SWE-bench repository, but Check says %v", err)
	}
	if n := len(DefaultExclusions().entries); n != 12 {
		t.Errorf("the SWE-bench list has %d repositories, want 12", n)
	}

	// An upstream whose clone (with commits of its own) the environment
	// could be: sharing the root commit is enough.
	dir := t.TempDir()
	upstream := filepath.Join(dir, "upstream")
	git(t, dir, "clone", "-q", repo.dir, upstream)
	git(t, upstream, "commit", "-q", "--allow-empty", "-m", "upstream moves on")
	list := filepath.Join(dir, "exclude.txt")
	cases := []struct {
		name, list, how string
	}{
		{"fork by root commit (local path)", "./upstream\n", "shares root commit " + repo.root},
		{"fork by root commit (hash)", "someone/else " + repo.root + "\n", "shares root commit"},
		{"by name", "# comment\nmaintainer/calc\n", "its name calc is a listed repository's"},
		{"by remote URL", "@swebench\n", "it is pallets/flask"},
		{"not listed", "someone/other\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(list, []byte(c.list), 0o644); err != nil {
				t.Fatal(err)
			}
			if c.name == "by remote URL" {
				git(t, repo.dir, "remote", "add", "origin", "https://github.com/pallets/flask.git")
				defer git(t, repo.dir, "remote", "remove", "origin")
			}
			x, err := LoadExclusions(context.Background(), list)
			if err != nil {
				t.Fatal(err)
			}
			err = x.Check(ctx, sb, e)
			var ex *ExcludedError
			switch {
			case c.how == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case c.how != "" && (!errors.As(err, &ex) || !strings.Contains(ex.How, c.how)):
				t.Errorf("Check = %v, want excluded because %q", err, c.how)
			}
		})
	}
	if _, err := parseExclusions(context.Background(), "django/django nothex\n", "x", ""); err == nil {
		t.Errorf("a list with a bad hash parsed")
	}
}

// TestCandidatesDeterministic: the same seed gives the same candidates in
// the same order; shards split the functions without overlap.
func TestCandidatesDeterministic(t *testing.T) {
	e := textkitEnv(t)
	ctx := context.Background()
	cov, err := env.LoadCoverage(e)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := testSandboxes.Open(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	keys := func(seed int64, sh shard.Shard) []string {
		r := &mutateRun{env: e, repo: "textkit", opts: MutateOptions{Seed: seed, Shard: sh, Families: mutate.Families},
			summary: &Summary{Families: map[string]*FamilyCounts{}}}
		for _, f := range mutate.AllFamilies {
			r.summary.Families[f] = &FamilyCounts{}
		}
		cands, err := r.candidates(ctx, sb, cov)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cands {
			out = append(out, c.key)
		}
		return out
	}
	a, b := keys(1, shard.Shard{Index: 0, Count: 1}), keys(1, shard.Shard{Index: 0, Count: 1})
	if len(a) < 100 || !cmp.Equal(a, b) {
		t.Fatalf("seed 1 twice: %d and %d candidates, equal %v", len(a), len(b), cmp.Equal(a, b))
	}
	if c := keys(2, shard.Shard{Index: 0, Count: 1}); cmp.Equal(a, c) {
		t.Errorf("seeds 1 and 2 give the same order")
	}
	s0, s1 := keys(1, shard.Shard{Index: 0, Count: 2}), keys(1, shard.Shard{Index: 1, Count: 2})
	seen := map[string]bool{}
	for _, k := range append(append([]string{}, s0...), s1...) {
		if seen[k] {
			t.Errorf("candidate %s is in both shards", k)
		}
		seen[k] = true
	}
	if len(s0) == 0 || len(s1) == 0 {
		t.Errorf("shards of %d and %d candidates", len(s0), len(s1))
	}
}
