package tracer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/errkind"
	"cwm/internal/golden"
	"cwm/internal/jsonl"
	"cwm/internal/shard"
)

func TestOutputsMatch(t *testing.T) {
	tests := []struct {
		output, expected string
		want             bool
	}{
		{"4\n", "4\n", true},
		{"4", "4\n", true},
		{"1 2\n", "1\n2", true},
		{"  1\t2\r\n\v", "1 2", true},
		{"yes", "YES\n", true},
		{"0.333333", "0.3333333", true},
		{"0.333331", "0.333339", true}, // within 1e-5
		{"0.3333", "0.3334", false},
		{"1000000000000000000", "1000000000000000000", true},
		{"12", "1 2", false},
		{"", "", true},
		{"", "0", false},
		{"1 2 3", "1 2", false},
		{"abc", "abd", false},
		{"1.0", "1", true},
		{"nan", "NaN", true}, // equal strings once lower-cased
	}
	for _, tt := range tests {
		if got := OutputsMatch(tt.output, tt.expected); got != tt.want {
			t.Errorf("OutputsMatch(%q, %q) = %v, want %v", tt.output, tt.expected, got, tt.want)
		}
	}
}

func writeProblems(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "problems.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadProblemsErrors: a bad record stops the command before anything
// runs, with the file and line and what is wrong.
func TestReadProblemsErrors(t *testing.T) {
	ok := `{"name": "a", "public_tests": {"input": ["1\n"], "output": ["1\n"]}, "solutions": {"language": [3], "solution": ["print(1)"]}}` + "\n"
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"not JSON", []string{ok, "{nope\n"}, "problems.jsonl:2:"},
		{"torn last line", []string{ok, `{"name": "b", "public_tests": {"inp`}, "problems.jsonl:2: the last line is cut off"},
		{"no name", []string{`{"solutions": {"language": [], "solution": []}}` + "\n"}, `problems.jsonl:1: no "name"`},
		{"duplicate name", []string{ok, ok}, "problems.jsonl:2: a: name already used on line 1"},
		{"languages and solutions differ", []string{`{"name": "c", "solutions": {"language": [3, 3], "solution": ["x"]}}` + "\n"},
			`problems.jsonl:1: c: "solutions" has 2 languages for 1 solutions`},
		{"inputs and outputs differ", []string{ok, `{"name": "d", "private_tests": {"input": ["1", "2"], "output": ["1"]}}` + "\n"},
			`problems.jsonl:2: d: "private_tests" has 2 inputs for 1 outputs`},
		{"language not a number", []string{`{"name": "e", "solutions": {"language": ["PYTHON3"], "solution": ["x"]}}` + "\n"},
			"problems.jsonl:1:"},
		{"empty", []string{"\n"}, "no problems"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadProblems(writeProblems(t, tt.lines...))
			if err == nil || !strings.Contains(err.Error(), tt.want) || errkind.Of(err) != errkind.Input {
				t.Fatalf("ReadProblems = %v (kind %v), want an input error containing %q", err, errkind.Of(err), tt.want)
			}
		})
	}
}

func TestProgRuns(t *testing.T) {
	probs, err := ReadProblems(filepath.Join("testdata", "prog", "problems.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ids := func(sel ProgSelect) []string {
		runs, err := ProgRuns(probs[:3], sel)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range runs {
			out = append(out, r.ID())
		}
		return out
	}
	all := []string{
		"1_A. Theatre Square/s1/public-0", "1_A. Theatre Square/s1/private-0",
		"1_A. Theatre Square/s1/generated-0", "1_A. Theatre Square/s1/generated-1",
		"4_A. Watermelon/s0/public-0", "4_A. Watermelon/s0/private-0", "4_A. Watermelon/s0/private-1",
		"4_A. Watermelon/s1/public-0", "4_A. Watermelon/s1/private-0", "4_A. Watermelon/s1/private-1",
		"cpp only",
	}
	if diff := cmp.Diff(all, ids(ProgSelect{})); diff != "" {
		t.Errorf("ProgRuns (all) -want +got:\n%s", diff)
	}
	capped := []string{
		"1_A. Theatre Square/s1/public-0", "1_A. Theatre Square/s1/generated-0",
		"4_A. Watermelon/s0/public-0", "4_A. Watermelon", "cpp only",
	}
	// 4_A has no generated test: with public only it would run, with
	// generated only it has nothing to run.
	got := ids(ProgSelect{Solutions: 1, Tests: 1, Kinds: []string{"public", "generated"}})
	if diff := cmp.Diff([]string{capped[0], capped[1], capped[2], capped[4]}, got); diff != "" {
		t.Errorf("ProgRuns (capped) -want +got:\n%s", diff)
	}
	got = ids(ProgSelect{Kinds: []string{"generated"}})
	if diff := cmp.Diff([]string{all[2], all[3], capped[3], capped[4]}, got); diff != "" {
		t.Errorf("ProgRuns (generated) -want +got:\n%s", diff)
	}
}

// progPool is a pool with a short timeout, for the programs that never
// end: each costs the timeout.
func progPool(t *testing.T) *Pool {
	t.Helper()
	p, err := NewPool(context.Background(), testRuntime(t), Options{Workers: 2, Timeout: 2 * time.Second, MaxCapture: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// fastIO reads and writes through the file descriptors of sys.stdin and
// sys.stdout, as competitive programs' fast-IO templates do.
const fastIO = `import os, sys
from io import BytesIO

class Out:
    def __init__(self, f):
        self.fd, self.buf = f.fileno(), BytesIO()
    def write(self, s):
        self.buf.write(s.encode())
    def flush(self):
        os.write(self.fd, self.buf.getvalue())

data = os.read(sys.stdin.fileno(), 1 << 16).split()
out = Out(sys.stdout)
out.write(str(int(data[0]) + int(data[1])) + "\n")
out.flush()
`

// TestTraceProg runs programs on stdin under the tracer. CWM-SPEC 1.5:
// "Competitive-programming solutions traced on their unit-test inputs;
// traces with more than 10,000 line events or over 1 MB are dropped."
func TestTraceProg(t *testing.T) {
	p := testPool(t)
	tests := []struct {
		name, prog, in string
		status         Status
		raised         string
		stdout         string
		text           []string // parts of the text
	}{
		{name: "functions inside the module", prog: "import sys\nn = int(input())\ndef f(x):\n    return x * 2\nprint(f(n))\n", in: "3\n",
			status: OK, stdout: "6\n",
			text: []string{`<|call_sep|>{"x": "3"}<|action_sep|>def f(x):`, `<|line_sep|>{"sys": "..", "n": "..", "f": "<function f>"}<|action_sep|>print(f(n))`}},
		{name: "read past the end", prog: "a = input()\nb = input()\nprint(a, b)\n", in: "1\n",
			status: Exception, raised: "EOFError",
			text: []string{`"(<class 'EOFError'>, EOFError('EOF when reading a line'), <traceback object>)"`}},
		{name: "sys.stdin and exit", prog: "import sys\nxs = list(map(int, sys.stdin.read().split()))\nsys.stdout.write(str(sum(xs)) + '\\n')\nexit()\n",
			in: "1 2\n3\n", status: Exception, raised: "SystemExit", stdout: "6\n", text: []string{`"xs": "[1, 2, 3]"`}},
		{name: "open(0)", prog: "print(open(0).read().upper(), end='')\n", in: "abc\n", status: OK, stdout: "ABC\n"},
		{name: "bytes", prog: "import sys\ndata = sys.stdin.buffer.read()\nsys.stdout.buffer.write(data[::-1])\n", in: "xyz", status: OK, stdout: "zyx"},
		{name: "__builtins__ is the module, as in a script", prog: "print(type(__builtins__).__name__, __name__)\n", in: "",
			status: OK, stdout: "module __main__\n"},
		{name: "main in a thread", prog: "import sys, threading\ndef main():\n    print(int(sys.stdin.readline()) + 1)\nthreading.stack_size(1 << 26)\nthreading.Thread(target=main).start()\n",
			in: "41\n", status: OK, stdout: "42\n"},
		{name: "fast IO on the file descriptors", prog: fastIO, in: "3 4\n", status: OK, stdout: "7\n"},
		{name: "no input", prog: "import sys\nprint(len(sys.stdin.read()))\n", in: "", status: OK, stdout: "0\n"},
		{name: "del at module level", prog: "a = 1; b = 2\ndel a; c = 3\nprint(b + c)\n", in: "", status: OK, stdout: "5\n",
			text: []string{`<|line_sep|>{"b": "..", "c": "3"}<|action_sep|>print(b + c)`}},
		{name: "over 10,000 line events", prog: "s = 0\nfor i in range(6000):\n    s += i\nprint(s)\n", in: "",
			status: TooLong, stdout: "17997000\n"},
		{name: "does not compile", prog: "print(\n", status: Error},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, end := p.TraceProg(context.Background(), "x", tt.prog, tt.in)
			if res.Status != tt.status || end.Raised != tt.raised || res.Stdout != tt.stdout {
				t.Fatalf("TraceProg = %s %q raised %q stdout %q, want %s raised %q stdout %q",
					res.Status, res.Error, end.Raised, res.Stdout, tt.status, tt.raised, tt.stdout)
			}
			if why := CheckRecord(&Record{Result: res}); why != "" {
				t.Errorf("CheckRecord: %s", why)
			}
			if !strings.HasPrefix(res.Context, "# << START_OF_TRACE\n# stdin:\n") {
				t.Errorf("context %q does not start with the marker and the input", res.Context)
			}
			for _, part := range tt.text {
				if !strings.Contains(res.Text, part) {
					t.Errorf("text does not contain %q:\n%s", part, res.Text)
				}
			}
			for _, f := range res.Frames {
				if res.Codes[f.Code].Qualname != "<module>" {
					continue // a class body's __module__ and __qualname__ are its own
				}
				for _, l := range f.Locals {
					if strings.HasPrefix(l.Name, "__") {
						t.Errorf("the module's dunder name %s is a local:\n%s", l.Name, res.Text)
					}
				}
			}
		})
	}
}

// TestTraceProgGolden pins a whole program's trace text.
func TestTraceProgGolden(t *testing.T) {
	prog := "n, m, a = map(int, input().split())\n\ndef ceil_div(x, y):\n    return -(-x // y)\n\nprint(ceil_div(n, a) * ceil_div(m, a))\n"
	res, _ := testPool(t).TraceProg(context.Background(), "x", prog, "6 6 4\n")
	if res.Status != OK {
		t.Fatalf("TraceProg: %s %q", res.Status, res.Error)
	}
	golden.Check(t, filepath.Join("testdata", "golden", "prog.txt"), res.Text)
}

// TestTraceProgs runs the stage on problems in CodeContests' shape: every
// line judged, complete traces valid, a resumed run writing nothing new,
// and --max.
func TestTraceProgs(t *testing.T) {
	in := filepath.Join("testdata", "prog", "problems.jsonl")
	probs, err := ReadProblems(in)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := ProgRuns(probs, ProgSelect{})
	if err != nil {
		t.Fatal(err)
	}
	p := progPool(t)
	out := filepath.Join(t.TempDir(), "progs.jsonl")
	opts := ProgOptions{Runs: runs, Out: out, In: in, Pool: p.Options(), Shard: shard.All}
	sum, err := traceProgs(context.Background(), p, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"1_A. Theatre Square/s1/public-0":    "passed",
		"1_A. Theatre Square/s1/private-0":   "passed",
		"1_A. Theatre Square/s1/generated-0": "passed",
		"1_A. Theatre Square/s1/generated-1": "passed",
		"4_A. Watermelon/s0/public-0":        "passed",
		"4_A. Watermelon/s0/private-0":       "passed",
		"4_A. Watermelon/s0/private-1":       "passed",
		"4_A. Watermelon/s1/public-0":        "passed",
		"4_A. Watermelon/s1/private-0":       "passed",
		"4_A. Watermelon/s1/private-1":       "passed",
		"cpp only":                           "no_python",
		"reads too much/s0/public-0":         "eof",
		"wrong and raising/s0/public-0":      "wrong_answer",
		"wrong and raising/s0/public-1":      "runtime_error",
		"long loop/s0/public-0":              "passed",
		"endless/s0/public-0":                "timeout",
		"endless/s1/public-0":                "timeout",
	}
	got := map[string]string{}
	err = jsonl.DecodeInput(out, func(n int, r ProgRecord) error {
		got[r.ID] = r.Verdict
		if r.Correct != (r.Verdict == "passed") {
			t.Errorf("line %d (%s): correct %v with result %s", n, r.ID, r.Correct, r.Verdict)
		}
		if r.Verdict != "passed" && r.Reason == "" {
			t.Errorf("line %d (%s): result %s without a reason", n, r.ID, r.Verdict)
		}
		if why := CheckRecord(&Record{Result: r.Result}); why != "" {
			t.Errorf("line %d (%s): %s", n, r.ID, why)
		}
		if !r.Status.Complete() && (len(r.Frames) > 0 || r.Text != "") {
			t.Errorf("line %d (%s): a dropped trace (%s) keeps %d frames", n, r.ID, r.Status, len(r.Frames))
		}
		switch r.ID {
		case "long loop/s0/public-0":
			if r.Status != TooLong || r.Stats.LineEvents <= 10000 {
				t.Errorf("%s: status %s after %d line events, want too_long past 10,000", r.ID, r.Status, r.Stats.LineEvents)
			}
		case "cpp only":
			if !strings.Contains(r.Reason, "no Python 3 solution") {
				t.Errorf("%s: reason %q", r.ID, r.Reason)
			}
		case "1_A. Theatre Square/s1/public-0":
			if r.Name != "1_A. Theatre Square" || r.Solution != 1 || r.TestKind != "public" || r.Expected != "4\n" || r.Stdout != "4\n" {
				t.Errorf("%s: %+v", r.ID, r)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results -want +got:\n%s", diff)
	}
	if sum.Verdicts["passed"] != 11 || sum.Verdicts["no_python"] != 1 || sum.Kept+sum.Dropped != 16 {
		t.Errorf("summary %+v", sum)
	}

	again, err := traceProgs(context.Background(), p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.Skipped != len(runs) || len(again.Verdicts) != 0 {
		t.Errorf("resumed run: skipped %d, wrote %v; want %d skipped, nothing written", again.Skipped, again.Verdicts, len(runs))
	}

	capped := filepath.Join(t.TempDir(), "capped.jsonl")
	opts.Out, opts.Max, opts.Runs = capped, 3, runs[:10]
	sum, err = traceProgs(context.Background(), p, opts)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := jsonl.Keys(capped, ProgStage.LineKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 || !sum.Stopped {
		t.Errorf("--max 3 wrote %d lines (stopped %v), want 3", len(keys), sum.Stopped)
	}
}

// traceProgs is TraceProgs on a pool the test already has.
func traceProgs(ctx context.Context, p *Pool, opts ProgOptions) (*ProgSummary, error) {
	return runProgs(ctx, opts, func(int) (*Pool, error) { return p, nil })
}

func TestJudge(t *testing.T) {
	code := func(n int) *int { return &n }
	tests := []struct {
		name   string
		res    Result
		end    ProgEnd
		want   string
		reason string
	}{
		{"passed", Result{Status: OK, Stdout: "YES\n"}, ProgEnd{}, VerdictPassed, ""},
		{"dropped trace, judged", Result{Status: TooLong, Stdout: "yes"}, ProgEnd{}, VerdictPassed, ""},
		{"wrong", Result{Status: OK, Stdout: "NO\n"}, ProgEnd{}, VerdictWrong, "not the expected one"},
		{"exit(0)", Result{Status: Exception, Stdout: "YES", Output: "SystemExit(0)"}, ProgEnd{Raised: "SystemExit", ExitCode: code(0)}, VerdictPassed, ""},
		{"exit(1)", Result{Status: Exception, Stdout: "YES", Output: "SystemExit(1)"}, ProgEnd{Raised: "SystemExit", ExitCode: code(1)}, VerdictRuntime, "raised SystemExit(1)"},
		{"EOF", Result{Status: Exception, Output: "EOFError('EOF when reading a line')"}, ProgEnd{Raised: "EOFError"}, VerdictEOF, "read past the end of its input"},
		{"raised", Result{Status: Exception, Output: "ValueError('x')"}, ProgEnd{Raised: "ValueError"}, VerdictRuntime, "raised ValueError('x')"},
		{"printed too much", Result{Status: OK, Stdout: "YES", Stats: Stats{StdoutChars: 11}}, ProgEnd{}, VerdictOutputLimit, "printed 11 characters"},
		{"timeout", Result{Status: Timeout, Error: "wall-clock limit"}, ProgEnd{}, VerdictTimeout, "wall-clock limit"},
		{"memory", Result{Status: Memory, Error: "oom"}, ProgEnd{}, VerdictMemory, "oom"},
		{"error", Result{Status: Error, Error: "does not compile"}, ProgEnd{}, VerdictError, "does not compile"},
	}
	for _, tt := range tests {
		got, reason := judge(&tt.res, tt.end, "YES\n", 10)
		if got != tt.want || !strings.Contains(reason, tt.reason) {
			t.Errorf("%s: judge = %s %q, want %s %q", tt.name, got, reason, tt.want, tt.reason)
		}
	}
}
