package tracer

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const branchy = `def f(x, s):
    if x > 10:
        r = 'big'
    elif x < 0:
        r = 'neg'
    else:
        r = 'small'
    if 'a' in s:
        r += s.upper()
    return r
`

func fuzzCalls(t *testing.T, p *Pool, f Func, opts FuzzOptions) []Fuzzed {
	t.Helper()
	orig := p.Trace(context.Background(), f)
	if orig.Status != OK {
		t.Fatalf("Trace(%s) status %s: %s", f.ID, orig.Status, orig.Error)
	}
	var kept []Fuzzed
	err := p.Fuzz(context.Background(), f, orig, opts, func(z Fuzzed) error {
		kept = append(kept, z)
		return nil
	})
	if err != nil {
		t.Fatalf("Fuzz(%s): %v", f.ID, err)
	}
	return kept
}

func TestFuzz(t *testing.T) {
	p := testPool(t)
	f := Func{ID: "branchy", Code: branchy, Call: "f(5, 'xyz')"}
	opts := FuzzOptions{N: 4, Seed: 7}
	first := fuzzCalls(t, p, f, opts)
	if len(first) == 0 {
		t.Fatalf("Fuzz(branchy) kept nothing")
	}
	if len(first) > opts.N {
		t.Errorf("Fuzz(branchy) kept %d inputs, want at most %d", len(first), opts.N)
	}
	var calls []string
	for i, z := range first {
		calls = append(calls, z.Func.Call)
		if want := "branchy/fuzz-" + string(rune('1'+i)); z.Func.ID != want || z.Result.ID != want {
			t.Errorf("kept input %d has id %q/%q, want %q", i, z.Func.ID, z.Result.ID, want)
		}
		if !z.Result.Status.Complete() || z.NewArcs == 0 {
			t.Errorf("kept %s: status %s, %d new arcs", z.Func.Call, z.Result.Status, z.NewArcs)
		}
		if !strings.HasPrefix(z.Func.Call, "f(") || "f("+z.Input+")" != z.Func.Call {
			t.Errorf("kept call %q with input %q", z.Func.Call, z.Input)
		}
	}
	// Deterministic for a seed.
	var again []string
	for _, z := range fuzzCalls(t, p, f, opts) {
		again = append(again, z.Func.Call)
	}
	if diff := cmp.Diff(calls, again); diff != "" {
		t.Errorf("Fuzz with the same seed kept different inputs (-first +second):\n%s", diff)
	}
	t.Logf("kept: %q", calls)
}

func TestFuzzNotMutable(t *testing.T) {
	p := testPool(t)
	f := Func{ID: "obj", Code: "class A:\n    pass\n\ndef f(a):\n    return a\n", Call: "f(A())"}
	orig := p.Trace(context.Background(), f)
	err := p.Fuzz(context.Background(), f, orig, FuzzOptions{N: 2}, func(Fuzzed) error { return nil })
	if !errors.Is(err, ErrNotMutable) {
		t.Errorf("Fuzz(f(A())) = %v, want ErrNotMutable", err)
	}
}

func TestMutateTypes(t *testing.T) {
	p := testPool(t)
	call := "f(3, 2.5, 'ab', b'xy', [1, 2], (1, 'a'), {'k': 1}, {1, 2}, True, None)"
	muts, err := p.Mutate(context.Background(), "", call, 42, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(muts) < 4 {
		t.Fatalf("Mutate(%s) gave %d mutations, want several", call, len(muts))
	}
	seen := map[string]bool{}
	var pairs []outputPair
	for _, m := range muts {
		if seen[m.Call] || m.Call == call {
			t.Errorf("Mutate gave %q twice or unchanged", m.Call)
		}
		seen[m.Call] = true
		pairs = append(pairs, outputPair{ID: m.Call, Got: "(" + m.Input + ",)", Want: call[1:]})
	}
	// The top-level types are preserved; checked in Python on the literals.
	const script = `
import ast, json, sys
for line in sys.stdin:
    p = json.loads(line)
    got = [type(v) for v in ast.literal_eval(p["got"])]
    want = [type(v) for v in ast.literal_eval(p["want"])]
    if got != want:
        print(p["id"], got, want)
`
	if bad := runPython(t, script, pairs); len(bad) > 0 {
		t.Errorf("mutations changed argument types: %q", bad)
	}
}

// TestCandidateStopsAtCap: a fuzzing candidate whose recording stops at a
// cap ends there (it cannot be kept), while a function traced for its own
// line runs on untraced, so that its output is known, until it finishes or
// the wall clock runs out.
func TestCandidateStopsAtCap(t *testing.T) {
	p := testPool(t)
	endless := Func{ID: "endless", Code: "def f(s, p):\n    while s.startswith(p):\n        s = s[len(p):] or s\n    return s\n", Call: "f('abc', '')"}
	r := p.trace(context.Background(), endless, true)
	if r.Status != TooLong || r.Stats.Seconds > 2 || r.Stats.LineEvents != p.Options().MaxEvents+1 {
		t.Errorf("candidate: %s after %.2fs, %d line events (%s); want too_long at the line cap at once",
			r.Status, r.Stats.Seconds, r.Stats.LineEvents, r.Error)
	}
	finite := Func{ID: "finite", Code: "def f(n):\n    t = 0\n    for i in range(n):\n        t += i\n    return t\n", Call: "f(20000)"}
	for _, stop := range []bool{false, true} {
		r := p.trace(context.Background(), finite, stop)
		want := "199990000"
		if stop {
			want = ""
		}
		if r.Status != TooLong || r.Output != want {
			t.Errorf("trace(finite, stop at cap %v): %s, output %q; want too_long, output %q", stop, r.Status, r.Output, want)
		}
	}
	if r := p.Trace(context.Background(), Func{ID: "after", Code: paperCode, Call: "f(1,3)"}); r.Text != paperText() {
		t.Errorf("after the candidates: %s %q, want the paper's trace", r.Status, r.Error)
	}
}

// TestFuzzKnown: inputs traced before fuzzing (a model's) are not kept
// again, and what they reached counts as covered: given the first input
// the same seed found before as known, fuzzing still finds others, each
// reaching an arc neither it nor the function's own input reached.
func TestFuzzKnown(t *testing.T) {
	p := testPool(t)
	f := Func{ID: "branchy", Code: branchy, Call: "f(5, 'xyz')"}
	first := fuzzCalls(t, p, f, FuzzOptions{N: 4, Seed: 7})
	if len(first) < 2 {
		t.Fatalf("Fuzz(branchy) kept %d inputs, want at least 2 to make one known", len(first))
	}
	known := Known{Call: first[0].Func.Call, Result: &first[0].Result}
	covered := arcs(known.Result)
	orig := p.Trace(context.Background(), f)
	for a := range arcs(&orig) {
		covered[a] = true
	}
	again := fuzzCalls(t, p, f, FuzzOptions{N: 4, Seed: 7, Known: []Known{known}})
	if len(again) == 0 {
		t.Fatalf("Fuzz with %s known kept nothing; without, it kept %d", known.Call, len(first))
	}
	for _, z := range again {
		if z.Func.Call == known.Call {
			t.Errorf("Fuzz kept %s, the known input", z.Func.Call)
		}
		n := 0
		for a := range arcs(&z.Result) {
			if !covered[a] {
				n++
			}
		}
		if n == 0 {
			t.Errorf("Fuzz kept %s, whose arcs the known and the function's own input reached", z.Func.Call)
		}
	}
}
