package tracer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/sandbox"
	"cwm/internal/trace"
)

// referenceCases exercise the shortcuts of the tracer's line path (record.py,
// values.py, cpython.py): names bound, unbound and rebound; values replaced
// by equal values of other types; containers changed in place, through
// aliases, reallocated, nested, self-referential; objects whose __eq__ must
// not run.
var referenceCases = []Func{
	{ID: "del-rebind", Call: "f()", Code: "def f():\n    a = 1\n    b = [1, 2]\n    del a\n    a = 2\n    b.append(3)\n    return a\n"},
	{ID: "except-as", Call: "f([1, 0, 2, 0])", Code: "def f(xs):\n    out = 0\n    for x in xs:\n        try:\n            out += 10 // x\n        except ZeroDivisionError as e:\n            out -= 1\n    return out\n"},
	{ID: "locals-reorder", Call: "f()", Code: "def f():\n    x = 1\n    y = 2\n    del x\n    d = locals(); x = 3\n    z = 4\n    return y\n"},
	{ID: "locals-write", Call: "f()", Code: "def f():\n    x = 1\n    locals()['extra'] = 5\n    y = 2\n    locals()['extra'] = 6\n    z = 3\n    return y\n"},
	{ID: "equal-other-types", Call: "f()", Code: "def f():\n    xs = [1, 2, 0.0, 'a']\n    xs[0] = True\n    xs[1] = 2.0\n    xs[2] = -0.0\n    xs[3] = 'a' + ''\n    n = len(xs)\n    return xs\n"},
	{ID: "scalar-types", Call: "f()", Code: "def f():\n    x = 1\n    x = True\n    x = 1\n    x = 1.0\n    y = -0.0\n    y = 0.0\n    y = 10**30\n    y = 10**30 + 0\n    return x\n"},
	{ID: "list-methods", Call: "f()", Code: "def f():\n    xs = [3, 1, 2]\n    xs.append(4)\n    xs.sort()\n    xs.reverse()\n    xs[1:3] = [9]\n    del xs[0]\n    xs.insert(0, 7)\n    inner = [1]\n    ys = [inner, 2]\n    inner.append(5)\n    zs = ys\n    zs[1] = 3\n    xs.clear()\n    return len(ys)\n"},
	{ID: "dict-methods", Call: "f()", Code: "def f():\n    d = {'a': 1, 'b': 2}\n    d['a'] = 3\n    d['c'] = 4\n    del d['b']\n    d['b'] = 5\n    e = {'k': [1]}\n    e['k'].append(2)\n    d['a'] = 3\n    d['a'] = True\n    return len(d)\n"},
	{ID: "sets", Call: "f()", Code: "def f():\n    s = {1, 2}\n    s.add(3)\n    s.discard(1)\n    t = frozenset(s)\n    s.add(10**20)\n    s.discard(10**20)\n    s.add(10**20)\n    return len(s)\n"},
	{ID: "tuples", Call: "f()", Code: "def f():\n    lst = [1]\n    t = (lst, 2)\n    u = (1, 'a', None)\n    lst.append(2)\n    return t\n"},
	{ID: "intenum", Call: "f()", Code: "import enum\nclass C(enum.IntEnum):\n    A = 1\n\ndef f():\n    xs = [1, 2]\n    xs[0] = C.A\n    n = 0\n    d = {'k': 1}\n    d['k'] = C.A\n    return xs\n"},
	{ID: "str-subclass", Call: "f()", Code: "class S(str):\n    def __repr__(self):\n        return 'S(' + str.__repr__(self) + ')'\n\ndef f():\n    xs = ['a', 'b']\n    xs[0] = S('a')\n    n = 0\n    return xs\n"},
	{ID: "eq-not-called", Call: "f()", Code: "class E:\n    calls = 0\n    def __eq__(self, other):\n        E.calls += 1\n        return True\n    __hash__ = object.__hash__\n\ndef f():\n    xs = [1, 2, 3]\n    e = E()\n    xs[1] = e\n    n = 0\n    d = {'a': 1}\n    d['a'] = e\n    c = E.calls\n    return c\n"},
	{ID: "huge-ints", Call: "f()", Code: "def f():\n    x = 1\n    for i in range(5):\n        x = x * 10**1000\n    xs = [1, 2]\n    xs[0] = 10**5000\n    return x.bit_length()\n"},
	{ID: "cells", Call: "f()", Code: "def f():\n    n = 0\n    def inc():\n        nonlocal n\n        n += 1\n    inc()\n    inc()\n    m = n\n    return m\n"},
	{ID: "generator", Call: "f()", Code: "def g(n):\n    for i in range(n):\n        yield i * i\n\ndef f():\n    out = []\n    for v in g(4):\n        out.append(v)\n    return out\n"},
	{ID: "aliases", Call: "f()", Code: "def f():\n    a = [1, 2]\n    b = a\n    b[0] = 5\n    a.append(6)\n    c = a[:]\n    c[0] = 0\n    return a\n"},
	{ID: "big-list", Call: "f()", Code: "def f():\n    xs = list(range(2000))\n    xs[0] = -1\n    xs[1999] = 5\n    xs.append(1)\n    n = 1\n    return n\n"},
	{ID: "self-reference", Call: "f()", Code: "def f():\n    xs = [1]\n    xs.append(xs)\n    xs[0] = 2\n    d = {}\n    d['me'] = d\n    d['x'] = 1\n    return len(xs)\n"},
	{ID: "reallocated", Call: "f()", Code: "def f():\n    xs = [0]\n    for i in range(40):\n        xs.append(i)\n    xs[3] = 99\n    for i in range(30):\n        xs.pop()\n    xs[0] = 5\n    return len(xs)\n"},
	{ID: "slices", Call: "f()", Code: "def f():\n    xs = [1, 2, 3, 4]\n    xs[:] = [5, 6, 7, 8]\n    xs[::2] = [0, 0]\n    xs[1], xs[2] = xs[2], xs[1]\n    return xs\n"},
	{ID: "empty", Call: "f()", Code: "def f():\n    xs = []\n    xs.append(1)\n    xs.pop()\n    ys = []\n    ys += [2]\n    return xs\n"},
	{ID: "nan", Call: "f()", Code: "def f():\n    nan = float('nan')\n    xs = [nan, 1.0]\n    xs[1] = nan\n    xs[0] = float('nan')\n    return len(xs)\n"},
	{ID: "tuple-elements", Call: "f()", Code: "def f():\n    xs = [(1, 2), (3, 'a')]\n    xs[0] = (1, 2)\n    inner = [1]\n    xs.append((inner,))\n    inner.append(2)\n    xs[1] = (3, None)\n    return len(xs)\n"},
	{ID: "escapes", Call: "f()", Code: "def f():\n    xs = ['a\"b', 'c\\\\d', '\\u00e9', '\\n']\n    xs[0] = 'x\"y'\n    xs[1] = 1\n    xs[1] = 2\n    return xs\n"},
	{ID: "many-changes", Call: "f()", Code: "def f():\n    xs = list(range(20))\n    xs.reverse()\n    xs[0:10] = range(10)\n    xs[0], xs[19] = xs[19], xs[0]\n    return xs\n"},
	{ID: "objects", Call: "f()", Code: "class P:\n    pass\n\ndef f():\n    p = P()\n    xs = [p, 1]\n    p.x = 1\n    xs[1] = P()\n    ys = [[1], [2]]\n    ys[0].append(3)\n    return len(xs)\n"},
	{ID: "bubble", Call: "f(30)", Code: "def f(n):\n    xs = [(i * 7919) % n for i in range(n)]\n    swaps = 0\n    for i in range(len(xs)):\n        for j in range(len(xs) - 1 - i):\n            if xs[j] > xs[j + 1]:\n                xs[j], xs[j + 1] = xs[j + 1], xs[j]\n                swaps += 1\n    return swaps\n"},
	{ID: "collatz", Call: "f(60)", Code: "def steps(n):\n    count = 0\n    while n != 1:\n        if n % 2 == 0:\n            n = n // 2\n        else:\n            n = 3 * n + 1\n        count += 1\n    return count\n\ndef f(limit):\n    best = 0\n    arg = 1\n    for i in range(1, limit):\n        s = steps(i)\n        if s > best:\n            best = s\n            arg = i\n    return arg, best\n"},
	{ID: "words", Call: "f(3)", Code: "def f(n):\n    text = \"the quick brown fox jumps over the lazy dog \" * n\n    counts = {}\n    word = \"\"\n    for ch in text:\n        if ch == \" \":\n            if word:\n                counts[word] = counts.get(word, 0) + 1\n            word = \"\"\n        else:\n            word += ch\n    longest = max(counts, key=len)\n    return longest, counts[longest]\n"},
}

// TestMatchesReference traces the CruxEval functions and referenceCases
// with the pool and with testdata/reftrace.py, which computes the text of
// every local at every event without any shortcut. With ".." resolved,
// every frame must be the same: this is what lets the line path skip work.
func TestMatchesReference(t *testing.T) {
	fs := append(cruxFuncs(loadCrux(t)), referenceCases...)
	got := traceAll(context.Background(), testPool(t), fs)
	want := referenceTraces(t, fs)
	for i, f := range fs {
		r := got[i]
		if !r.Status.Complete() {
			t.Errorf("%s: status %s (%s)", f.ID, r.Status, r.Error)
			continue
		}
		if diff := cmp.Diff(want[f.ID], expanded(r)); diff != "" {
			t.Errorf("%s: frames differ from the reference (-reference +tracer):\n%s", f.ID, diff)
		}
	}
}

// refFrame is a frame as reftrace.py and expanded write it.
type refFrame struct {
	Event  int
	Lineno int
	Locals [][2]string
	Arg    string
}

func (f *refFrame) UnmarshalJSON(b []byte) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil || len(parts) != 3 {
		return fmt.Errorf("reference frame %s: %v", b, err)
	}
	if err := json.Unmarshal(parts[0], &f.Event); err != nil {
		return err
	}
	if err := json.Unmarshal(parts[1], &f.Lineno); err != nil {
		return err
	}
	if f.Event == int(trace.Call) || f.Event == int(trace.Line) {
		if err := json.Unmarshal(parts[2], &f.Locals); err != nil {
			return err
		}
		if len(f.Locals) == 0 {
			f.Locals = nil
		}
		return nil
	}
	return json.Unmarshal(parts[2], &f.Arg)
}

func expanded(r Result) []refFrame {
	frames := trace.Expand(r.Trace().Frames)
	out := make([]refFrame, len(frames))
	for i, f := range frames {
		out[i] = refFrame{Event: int(f.Event), Lineno: r.Frames[i].Lineno, Arg: f.Arg}
		for _, l := range f.Locals {
			out[i].Locals = append(out[i].Locals, [2]string{l.Name, l.Value})
		}
	}
	return out
}

// referenceTraces runs reftrace.py on fs in one sandbox.
func referenceTraces(t *testing.T, fs []Func) map[string][]refFrame {
	t.Helper()
	ctx := context.Background()
	sb, err := testRuntime(t).New(ctx, sandbox.Config{Workdir: "/tmp", Env: workerEnv})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if err := installPy(ctx, sb); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("testdata/reftrace.py")
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.WriteFile(ctx, pyDir+"/reftrace.py", script, 0o644); err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, f := range fs {
		enc.Encode(map[string]string{"id": f.ID, "source": Context(f.Code, f.Call)})
	}
	r, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"/usr/bin/python3", "-s", pyDir + "/reftrace.py"},
		Stdin: &in, Capture: 1 << 30})
	if err != nil || !r.Success() {
		t.Fatalf("reftrace.py: %v %s %s", err, r.Describe(), r.Stderr)
	}
	out := map[string][]refFrame{}
	sc := bufio.NewScanner(bytes.NewReader(r.Stdout))
	sc.Buffer(nil, 1<<28)
	for sc.Scan() {
		var line struct {
			ID     string     `json:"id"`
			Frames []refFrame `json:"frames"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("reftrace.py output: %v", err)
		}
		out[line.ID] = line.Frames
	}
	if len(out) != len(fs) {
		t.Fatalf("reftrace.py traced %d functions, want %d", len(out), len(fs))
	}
	return out
}
