package mutate

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/sandbox"
	"cwm/internal/sandbox/sandboxtest"
)

var testRT *sandbox.Runtime

func TestMain(m *testing.M) {
	sandboxtest.Main(m, "mutate", func(rt *sandbox.Runtime, _ string) { testRT = rt })
}

// generate runs mutate.py, on the host's Python inside a sandbox, over one
// file holding src, for the named functions (line 0: found by name).
func generate(t *testing.T, src string, funcs []string, req Request) (*Result, []byte) {
	t.Helper()
	layer := t.TempDir()
	if err := os.MkdirAll(filepath.Join(layer, "repo", "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(layer, "repo", "pkg", "mod.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := testRT.New(ctx, sandbox.Config{Layers: []string{layer}, Workdir: "/repo"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	spec := FileSpec{}
	for _, f := range funcs {
		spec.Functions = append(spec.Functions, Func{Name: f})
	}
	for i := 1; i <= strings.Count(src, "\n")+1; i++ {
		spec.Executed = append(spec.Executed, i)
	}
	req.Files = map[string]FileSpec{"pkg/mod.py": spec}
	if req.PerOperator == 0 {
		req.PerOperator = 100
	}
	res, err := Generate(ctx, s, req)
	if err != nil {
		t.Fatal(err)
	}
	return res, []byte(src)
}

// r is an expected mutant: the original with old replaced by new (old
// must occur exactly once), so everything else is byte for byte the
// original.
type r struct{ old, new string }

// TestFamiliesMatchSpec holds the operators to CWM-SPEC section 3:
//
//	"apply one of five mutation families (share of all trajectories):
//	functions 7% (remove part or all of a body), arguments 9% (remove
//	parameters from a definition, reorder call arguments), variables 6%
//	(swap every occurrence of a pair), statements 11% (remove an import or
//	a return), operators 12% (replace binary, unary or boolean operators).
//	A mutation must parse, and must make the associated tests fail."
//
// (Parsing is checked by TestOperators' "does not compile" counts; failing
// tests by the tasks package.)
func TestFamiliesMatchSpec(t *testing.T) {
	spec := []struct {
		family string
		does   string
		ops    []string
	}{
		{Functions, "remove part or all of a body", []string{"remove_part", "remove_body"}},
		{Arguments, "remove parameters from a definition, reorder call arguments", []string{"remove_parameter", "reorder_call_arguments"}},
		{Variables, "swap every occurrence of a pair", []string{"swap_variables"}},
		{Statements, "remove an import or a return", []string{"remove_import", "remove_import_name", "remove_return"}},
		{Operators, "replace binary, unary or boolean operators", []string{"binary_operator", "unary_operator", "boolean_operator", "comparison_operator"}},
	}
	if len(Families) != len(spec) {
		t.Errorf("Families = %v, want the spec's five", Families)
	}
	for i, s := range spec {
		if i < len(Families) && Families[i] != s.family {
			t.Errorf("Families[%d] = %s, want %s (the spec's order)", i, Families[i], s.family)
		}
		got := append([]string(nil), FamilyOperators[s.family]...)
		want := append([]string(nil), s.ops...)
		sort.Strings(got)
		sort.Strings(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("operators of %s (%q) (-want +got):\n%s", s.family, s.does, diff)
		}
	}
}

// TestOperators checks every operator's exact output on small sources:
// the mutated span changes, nothing else does (comments and layout
// elsewhere stay byte for byte, since each expected mutant is the
// original with one replacement).
func TestOperators(t *testing.T) {
	cases := []struct {
		name     string
		src      string
		funcs    []string
		operator string
		want     [][]r // each mutant as replacements of the original
		syntax   int   // sites dropped because they do not compile
	}{
		{
			name: "remove_body keeps comments above the body", operator: "remove_body", funcs: []string{"add"},
			src:  "def add(a, b):\n    # sum them\n    total = a + b  # inline\n    return total\n\n\nX = 1  # after\n",
			want: [][]r{{{"    total = a + b  # inline\n    return total\n", "    pass\n"}}},
		},
		{
			name: "remove_body leaves the docstring", operator: "remove_body", funcs: []string{"area"},
			src:  "def area(w, h):\n    \"\"\"Area of a rectangle.\"\"\"\n    result = w * h\n    return result\n",
			want: [][]r{{{"    result = w * h\n    return result\n", ""}}},
		},
		{
			name: "remove_body of a one-line function", operator: "remove_body", funcs: []string{"one"},
			src:  "def one(): return 1  # the answer\n",
			want: [][]r{{{"return 1", "pass"}}},
		},
		{
			name: "remove_part: contiguous statements, never a lone return", operator: "remove_part", funcs: []string{"sign"},
			src: "def sign(x):\n    if x < 0:\n        return -1  # negative\n    y = 1\n    return y\n",
			want: [][]r{
				{{"    if x < 0:\n        return -1  # negative\n", ""}},
				{{"    if x < 0:\n        return -1  # negative\n    y = 1\n", ""}},
				{{"    y = 1\n", ""}},
				{{"    y = 1\n    return y\n", ""}},
			},
		},
		{
			name: "remove_part takes whole lines only", operator: "remove_part", funcs: []string{"f"},
			src:  "def f(x):\n    a = x; b = a\n    return b\n",
			want: [][]r{{{"    a = x; b = a\n", ""}}},
		},
		{
			name: "remove_parameter: every kind of parameter", operator: "remove_parameter", funcs: []string{"scale"},
			src: "def scale(values, factor=2, *rest, offset: int = 0, **opts):\n    return [v * factor + offset for v in values]\n",
			want: [][]r{
				{{"values, factor", "factor"}},
				{{"factor=2, *rest", "*rest"}},
				{{"*rest, offset", "offset"}},
				{{"offset: int = 0, **opts", "**opts"}},
				{{", **opts", ""}},
			},
		},
		{
			name: "remove_parameter spares self and drops what no longer compiles", operator: "remove_parameter",
			funcs: []string{"Box.resize", "kw"},
			src:   "class Box:\n    def resize(self, w,\n               h):  # keep\n        self.w, self.h = w, h\n\n\ndef kw(a, *, b):\n    return a + b\n",
			want: [][]r{
				{{"self, w,\n", "self, \n"}},
				{{"w,\n               h)", "w)"}},
				{{"a, *, b", "*, b"}},
			},
			syntax: 1, // kw(a, *) has a bare star with nothing after it
		},
		{
			name: "reorder_call_arguments keeps layout and comments", operator: "reorder_call_arguments", funcs: []string{"pad"},
			src: "def pad(text, width):\n    return text.ljust(width, \"-\") + fmt(  # comment\n        text, width) + max(width, width)\n",
			want: [][]r{
				{{`ljust(width, "-")`, `ljust("-", width)`}},
				{{"        text, width)", "        width, text)"}},
			},
		},
		{
			name: "swap_variables swaps names, never comments", operator: "swap_variables", funcs: []string{"diff"},
			src: "def diff(a, b):\n    d = a - b  # a minus b\n    return d\n",
			want: [][]r{
				{{"    d = a - b  # a minus b\n    return d\n", "    a = d - b  # a minus b\n    return a\n"}},
				{{"    d = a - b  # a minus b\n    return d\n", "    b = a - d  # a minus b\n    return b\n"}},
				{{"d = a - b", "d = b - a"}},
			},
		},
		{
			name: "swap_variables needs a parameter in the pair", operator: "swap_variables", funcs: []string{"locals_only"},
			src:  "def locals_only():\n    x = 1\n    y = 2\n    return x - y\n",
			want: nil,
		},
		{
			name: "remove_return: a lone return becomes pass", operator: "remove_return", funcs: []string{"first"},
			src: "def first(items):\n    for it in items:\n        if it:\n            return it\n    return None\n",
			want: [][]r{
				{{"            return it\n", "            pass\n"}},
				{{"    return None\n", ""}},
			},
		},
		{
			name: "remove_import: module imports the function reads", operator: "remove_import", funcs: []string{"f", "g"},
			src: "import os, sys\nfrom math import (\n    floor,\n    ceil,\n)\nimport json  # not read\n\n\ndef f(x):\n    return floor(x) + ceil(x) + len(os.sep)\n\n\ndef g():\n    import re\n    return re.escape(\"a.b\")\n",
			want: [][]r{
				{{"import os, sys\n", ""}},
				{{"from math import (\n    floor,\n    ceil,\n)\n", ""}},
				{{"    import re\n", ""}},
			},
		},
		{
			name: "remove_import_name: one name of a multi-name import", operator: "remove_import_name", funcs: []string{"f"},
			src: "import os, sys\nfrom math import (\n    floor,\n    ceil,\n)\n\n\ndef f(x):\n    return floor(x) + ceil(x) + len(os.sep)\n",
			want: [][]r{
				{{"import os, sys", "import sys"}},
				{{"    floor,\n", ""}},
				{{"    ceil,\n", ""}},
			},
		},
		{
			name: "binary_operator, augmented assignment included", operator: "binary_operator", funcs: []string{"calc"},
			src: "def calc(a, b):\n    c = (a) * b  # times\n    c += 1\n    return c\n",
			want: [][]r{
				{{"(a) * b", "(a) / b"}},
				{{"(a) * b", "(a) + b"}},
				{{"c += 1", "c -= 1"}},
			},
		},
		{
			name: "unary_operator", operator: "unary_operator", funcs: []string{"calc"},
			src: "def calc(a):\n    if not a:\n        return -a\n    return not(a)\n",
			want: [][]r{
				{{"if not a:", "if a:"}},
				{{"return -a", "return +a"}},
				{{"return not(a)", "return (a)"}},
			},
		},
		{
			name: "comparison_operator, two-word operators too", operator: "comparison_operator", funcs: []string{"calc"},
			src: "def calc(a, b):\n    return a < b or a is  None or b not in (1, 2)\n",
			want: [][]r{
				{{"a < b", "a <= b"}},
				{{"a < b", "a > b"}},
				{{"a is  None", "a is not  None"}},
				{{"b not in (1, 2)", "b in (1, 2)"}},
			},
		},
		{
			name: "boolean_operator replaces every operator of one chain", operator: "boolean_operator", funcs: []string{"calc"},
			src: "def calc(a, b, c):\n    return (a and b and\n            c) or not a\n",
			want: [][]r{
				{{"(a and b and\n", "(a or b or\n"}},
				{{"c) or not a", "c) and not a"}},
			},
		},
		{
			name: "nested functions are functions of their own", operator: "binary_operator", funcs: []string{"outer"},
			src:  "def outer(a):\n    def inner(b):\n        return b - 1\n    return inner(a) + 1\n",
			want: [][]r{{{"inner(a) + 1", "inner(a) - 1"}}},
		},
		{
			name: "nested function found by its qualified name", operator: "binary_operator", funcs: []string{"outer.<locals>.inner"},
			src:  "def outer(a):\n    def inner(b):\n        return b - 1\n    return inner(a) + 1\n",
			want: [][]r{{{"b - 1", "b + 1"}}},
		},
		{
			name: "invert_if swaps the branches' lines, elif chains stay", operator: "invert_if", funcs: []string{"pick", "grade"},
			src: "def pick(x):\n    if x > 0:\n        y = 1  # positive\n    else:\n        y = -1\n    return y\n\n\n" +
				"def grade(s):\n    if s > 8:\n        return \"a\"\n    elif s > 4:\n        return \"b\"\n    else:\n        return \"c\"\n",
			want: [][]r{
				{{"        y = 1  # positive\n    else:\n        y = -1\n", "        y = -1\n    else:\n        y = 1  # positive\n"}},
				{{"        return \"b\"\n    else:\n        return \"c\"\n", "        return \"c\"\n    else:\n        return \"b\"\n"}},
			},
		},
		{
			name: "change_constant: decimal integers only", operator: "change_constant", funcs: []string{"f"},
			src: "def f(x):\n    return x * 10 + 0x1 + 0 + 2.5\n",
			want: [][]r{
				{{"x * 10", "x * 11"}},
				{{"x * 10", "x * 9"}},
				{{"+ 0 +", "+ 1 +"}},
			},
		},
		{
			name: "swap_operands: not of commutative operators", operator: "swap_operands", funcs: []string{"g"},
			src: "def g(a, b):\n    return a - b, a < b, a + b, a - a, 1 < a < b\n",
			want: [][]r{
				{{"a - b,", "b - a,"}},
				{{"a < b,", "b < a,"}},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, orig := generate(t, tc.src, tc.funcs, Request{Seed: 1, Families: AllFamilies})
			if len(res.Errors) > 0 || len(res.Unmatched) > 0 {
				t.Fatalf("errors %v, unmatched %v", res.Errors, res.Unmatched)
			}
			var got []string
			for _, m := range res.Mutants {
				if m.Operator != tc.operator {
					continue
				}
				out, err := m.Apply(orig)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(out))
			}
			var want []string
			for _, reps := range tc.want {
				s := tc.src
				for _, rp := range reps {
					if n := strings.Count(s, rp.old); n != 1 {
						t.Fatalf("bad test: %q occurs %d times", rp.old, n)
					}
					s = strings.Replace(s, rp.old, rp.new, 1)
				}
				want = append(want, s)
			}
			sort.Strings(got)
			sort.Strings(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s mutants (-want +got):\n%s", tc.operator, diff)
			}
			fam := ""
			for f, ops := range FamilyOperators {
				for _, op := range ops {
					if op == tc.operator {
						fam = f
					}
				}
			}
			if got := res.FamilyStats()[fam].Syntax; tc.syntax != 0 && got != tc.syntax {
				t.Errorf("%s: %d sites did not compile, want %d", fam, got, tc.syntax)
			}
		})
	}
}

func TestDeterministicSampling(t *testing.T) {
	src := "def f(a, b, c, d):\n    return a + b + c + d + a * b * c * d - a - b - c - d\n"
	keys := func(seed int64) []string {
		res, orig := generate(t, src, []string{"f"}, Request{Seed: seed, PerOperator: 3, Families: []string{Operators}})
		var out []string
		for _, m := range res.Mutants {
			b, err := m.Apply(orig)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, Key(m.File, b))
		}
		return out
	}
	a, b := keys(7), keys(7)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different mutants:\n%s", diff)
	}
	if len(a) != 3 {
		t.Errorf("PerOperator 3 gave %d binary_operator mutants, want 3", len(a))
	}
	differs := false
	for seed := int64(8); seed < 14 && !differs; seed++ {
		differs = !cmp.Equal(a, keys(seed))
	}
	if !differs {
		t.Errorf("six other seeds all sampled the same sites as seed 7")
	}
}

func TestApplyRejectsBadEdits(t *testing.T) {
	m := Mutant{File: "x.py", Operator: "o", Edits: []Edit{{Start: 4, End: 6, Text: "a"}, {Start: 2, End: 3, Text: "b"}}}
	if _, err := m.Apply([]byte("0123456789")); err == nil {
		t.Errorf("Apply with edits out of order = nil error")
	}
	m.Edits = []Edit{{Start: 2, End: 3, Text: "b"}, {Start: 4, End: 60, Text: "a"}}
	if _, err := m.Apply([]byte("0123456789")); err == nil {
		t.Errorf("Apply past the end = nil error")
	}
}

func TestDefaultFamiliesAreCWMs(t *testing.T) {
	res, _ := generate(t, "def g(a, b):\n    if a:\n        return a - b\n    else:\n        return 1\n", []string{"g"}, Request{Seed: 1})
	seen := map[string]bool{}
	for _, m := range res.Mutants {
		seen[m.Family] = true
	}
	if seen[Procedural] || !seen[Operators] {
		t.Errorf("families of the default request: %v; want CWM's, without %s", seen, Procedural)
	}
}
