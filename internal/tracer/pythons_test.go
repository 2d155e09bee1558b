package tracer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/base/basetest"
	"cwm/internal/golden"
	"cwm/internal/hostexec"
	"cwm/internal/sandbox"
)

// versionProgram is a program whose trace is pinned on every Python the
// tracer runs on: one golden text (3.11's), and for the differences
// docs/traces.md ("Python versions") documents, the minor versions that
// write another text and the golden file of it.
type versionProgram struct {
	name, code, call string
	stdin            *string // a whole program (TraceProg) on this input
	variants         map[int]string
}

// versionPrograms are the package's golden programs and one for each
// documented difference; portable exercises what the tracer makes the same
// on every version (qualified names, the order of f_locals, a str
// iterator's name, del at the end of an except block, a generator, an int
// past 3.11's int-to-str limit).
var versionPrograms = []versionProgram{
	{name: "paper", code: paperCode, call: "f(1,3)"},
	{name: "exception", code: "def f(text, sub):\n    i = text.index(sub)\n    return i\n", call: "f('abc', 'z')"},
	{name: "prog", code: "n, m, a = map(int, input().split())\n\ndef ceil_div(x, y):\n    return -(-x // y)\n\nprint(ceil_div(n, a) * ceil_div(m, a))\n",
		stdin: ptr("6 6 4\n")},
	{name: "portable", code: `class Counter:
    def __init__(self, start):
        self.n = start

    def bump(self, k):
        self.n += k
        return self.n


def squares(n):
    for i in range(n):
        yield i * i


def scale(factor, xs):
    def by(x):
        y = x * factor
        return y
    out = []
    for x in xs:
        out.append(by(x))
    return out


def f(text, xs):
    c = Counter(len(text))
    it = iter(text)
    first = next(it)
    total = c.bump(sum(squares(3)))
    try:
        {}[first]
    except KeyError as e:
        missing = str(e)
    big = 7 ** 6000
    return first, total, scale(2, xs), missing, big > 0
`, call: "f('abc', [1, 2])"},
	// Past the recursion limit: before 3.11 the caller of the frame that
	// could not start unwinds untraced unless the tracer records it.
	{name: "recursion", code: "import sys\n\n\ndef down(n):\n    return down(n + 1)\n\n\ndef f():\n    sys.setrecursionlimit(40)\n    try:\n        down(0)\n    except RecursionError as e:\n        return str(e)\n",
		call: "f()"},
	// PEP 709: from 3.12 list, dict and set comprehensions are inlined.
	{name: "comprehension", code: "def f(xs):\n    ys = [x * 2 for x in xs if x]\n    return {k: v for k, v in zip(xs, ys)}\n",
		call: "f([1, 0, 3])", variants: map[int]string{12: "comprehension.py312.txt", 13: "comprehension.py312.txt"}},
	// 3.9's line table (before PEP 626) has no line for while True.
	{name: "whiletrue", code: "def f(n):\n    i = 0\n    while True:\n        i += 1\n        if i >= n:\n            break\n    return i\n",
		call: "f(2)", variants: map[int]string{9: "whiletrue.py39.txt"}},
	// 3.11 hashes str with SipHash-1-3 (before: SipHash-2-4): a set of
	// str iterates in another order, also with PYTHONHASHSEED=0.
	{name: "strset", code: "def f(words):\n    seen = set(words)\n    return len(seen)\n",
		call: "f(['to', 'be', 'or', 'not'])", variants: map[int]string{9: "strset.py39.txt", 10: "strset.py39.txt"}},
}

func ptr[T any](v T) *T { return &v }

// golden is the file of p's text on Python 3.minor.
func (p *versionProgram) golden(minor int) string {
	name := p.name + ".txt"
	if v, ok := p.variants[minor]; ok {
		name = v
	}
	return filepath.Join("testdata", "golden", name)
}

func (p *versionProgram) trace(ctx context.Context, pool *Pool) Result {
	if p.stdin != nil {
		res, _ := pool.TraceProg(ctx, p.name, p.code, *p.stdin)
		return res
	}
	return pool.Trace(ctx, Func{ID: p.name, Code: p.code, Call: p.call})
}

// checkVersionPrograms traces every program on pool (Python 3.minor) and
// compares each text with its golden file; a program without a variant
// for minor must also give the host's (3.11's) text, so that -update run
// on one version cannot make another's differences its golden.
func checkVersionPrograms(t *testing.T, pool *Pool, minor int) {
	ctx := context.Background()
	for i := range versionPrograms {
		p := &versionPrograms[i]
		res := p.trace(ctx, pool)
		if res.Status != OK && !(p.name == "exception" && res.Status == Exception) {
			t.Errorf("%s on 3.%d: status %s (%s)", p.name, minor, res.Status, res.Error)
			continue
		}
		if _, ok := p.variants[minor]; !ok {
			if want := p.trace(ctx, testPool(t)); res.Text != want.Text {
				t.Errorf("%s on 3.%d differs from the host's 3.11 (-3.11 +3.%d):\n%s", p.name, minor, minor, cmp.Diff(want.Text, res.Text))
			}
		}
		golden.Check(t, p.golden(minor), res.Text)
	}
}

// TestGoldenOnEveryPython traces the golden programs on the Debian test
// bases' Pythons, 3.9 (bullseye), 3.11 (bookworm) and 3.13 (trixie).
func TestGoldenOnEveryPython(t *testing.T) {
	for _, c := range []struct {
		suite string
		minor int
	}{{"bullseye", 9}, {"bookworm", 11}, {"trixie", 13}} {
		t.Run(c.suite, func(t *testing.T) {
			pool := versionPool(t, Options{Base: basetest.Debian(t, c.suite).Rootfs()})
			checkVersionPrograms(t, pool, c.minor)
		})
	}
}

// EnvPythons names interpreters outside the test bases to run the version
// tests on (TestGoldenOnPythons, TestCruxEvalOnPythons): paths separated
// by spaces, each a python3 under a prefix of its own (as pyenv installs
// them), which is laid over the host's system directories in the sandbox.
const EnvPythons = "CWM_TRACER_PYTHONS"

// TestGoldenOnPythons is TestGoldenOnEveryPython on the interpreters of
// $CWM_TRACER_PYTHONS; one the tracer does not run on must be refused by
// the worker with the sentence CheckPython writes.
func TestGoldenOnPythons(t *testing.T) {
	for _, py := range envPythons(t) {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(py))), func(t *testing.T) {
			opts, minor := interpreterOptions(t, py)
			if minor >= OldestPython && minor <= NewestPython {
				checkVersionPrograms(t, versionPool(t, opts), minor)
				return
			}
			p, err := NewPool(context.Background(), testRuntime(t), opts)
			if err == nil {
				p.Close()
				t.Fatalf("a trace worker started on Python 3.%d", minor)
			}
			if want := fmt.Sprintf("needs Python %s (this environment has 3.%d)", Pythons, minor); !strings.Contains(err.Error(), want) {
				t.Errorf("NewPool on 3.%d: %v\nwant it to say %q", minor, err, want)
			}
		})
	}
}

// envPythons are the interpreters of $CWM_TRACER_PYTHONS; t is skipped
// when it names none (they are a developer's, not the test bases').
func envPythons(t *testing.T) []string {
	pys := strings.Fields(os.Getenv(EnvPythons))
	if len(pys) == 0 {
		t.Skipf("$%s names no interpreter", EnvPythons)
	}
	return pys
}

// versionPool is a pool of one worker with opts, closed at the end of t.
func versionPool(t *testing.T, opts Options) *Pool {
	t.Helper()
	opts.Workers, opts.Timeout = 1, 10e9
	p, err := NewPool(context.Background(), testRuntime(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

var pyVersion = regexp.MustCompile(`^Python 3\.(\d+)\.`)

// interpreterOptions are the pool options that run the interpreter py (a
// path under its own prefix, such as /root/.pyenv/versions/3.12.1/bin/python3)
// in the sandbox: its prefix hard-linked into a layer at the same path over
// the host's system directories; and its minor version, as it says.
func interpreterOptions(t *testing.T, py string) (Options, int) {
	t.Helper()
	prefix := filepath.Dir(filepath.Dir(py))
	layer := t.TempDir()
	dst := filepath.Join(layer, prefix)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := hostexec.Output(context.Background(), hostexec.Cmd{Args: []string{"cp", "-al", prefix, dst}, Timeout: 5 * 60e9}); err != nil {
		t.Fatalf("link %s into a layer: %v", prefix, err)
	}
	opts := Options{Layers: []string{layer}, Python: py}
	sb, err := testRuntime(t).New(context.Background(), sandbox.Config{Layers: opts.Layers})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	r, err := sb.Exec(context.Background(), sandbox.Cmd{Args: []string{py, "--version"}, Capture: 4096})
	if err != nil || !r.Success() {
		t.Fatalf("%s --version in a sandbox: %v %s %s", py, err, r.Describe(), r.Stderr)
	}
	m := pyVersion.FindSubmatch(r.Stdout)
	if m == nil {
		t.Fatalf("%s --version = %q", py, r.Stdout)
	}
	minor, _ := strconv.Atoi(string(m[1]))
	return opts, minor
}
