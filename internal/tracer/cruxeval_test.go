package tracer

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"cwm/internal/sandbox"
	"cwm/internal/trace"
)

// cruxCase is one line of testdata/cruxeval.jsonl (CRUXEval, MIT licence in
// testdata/cruxeval.LICENSE).
type cruxCase struct {
	ID     string `json:"id"`
	Code   string `json:"code"`
	Input  string `json:"input"`
	Output string `json:"output"`
}

func loadCrux(tb testing.TB) []cruxCase {
	tb.Helper()
	data, err := os.ReadFile("testdata/cruxeval.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	var cases []cruxCase
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var c cruxCase
		if err := json.Unmarshal(line, &c); err != nil {
			tb.Fatalf("cruxeval.jsonl: %v", err)
		}
		cases = append(cases, c)
	}
	return cases
}

func cruxFuncs(cases []cruxCase) []Func {
	fs := make([]Func, len(cases))
	for i, c := range cases {
		fs[i] = Func{ID: c.ID, Code: c.Code, Call: "f(" + c.Input + ")"}
	}
	return fs
}

// traceAll traces fs with as many calls in flight as the pool has workers.
func traceAll(ctx context.Context, p *Pool, fs []Func) []Result {
	out := make([]Result, len(fs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range p.Options().Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = p.Trace(ctx, fs[i])
			}
		}()
	}
	for i := range fs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

func TestCruxEval(t *testing.T) {
	p := testPool(t)
	cases := loadCrux(t)
	if len(cases) != 800 {
		t.Fatalf("cruxeval.jsonl has %d functions, want 800", len(cases))
	}
	ctx := context.Background()
	first := traceAll(ctx, p, cruxFuncs(cases))
	second := traceAll(ctx, p, cruxFuncs(cases))
	var pairs []outputPair
	for i, r := range first {
		c := cases[i]
		if r.Status != OK {
			t.Errorf("%s: status %s (%s)", c.ID, r.Status, r.Error)
			continue
		}
		tr, err := trace.Parse(r.Text)
		if err != nil {
			t.Errorf("%s: trace.Parse: %v", c.ID, err)
			continue
		}
		if err := trace.Validate(tr); err != nil {
			t.Errorf("%s: trace.Validate: %v", c.ID, err)
		}
		if r.Text != second[i].Text || r.Output != second[i].Output {
			t.Errorf("%s: tracing twice gave different text", c.ID)
		}
		pairs = append(pairs, outputPair{ID: c.ID, Got: r.Output, Want: c.Output})
	}
	for _, bad := range comparePython(t, pairs) {
		t.Errorf("output differs from CRUXEval's as a Python value: %s", bad)
	}
}

type outputPair struct {
	ID   string `json:"id"`
	Got  string `json:"got"`
	Want string `json:"want"`
}

// compareScript reads {"id", "got", "want"} lines and prints the ids whose
// texts are different Python values (ast.literal_eval on both sides).
const compareScript = `
import ast, json, sys
for line in sys.stdin:
    p = json.loads(line)
    try:
        same = ast.literal_eval(p["got"]) == ast.literal_eval(p["want"])
    except Exception as e:
        same = False
    if not same:
        print("%s: got %s, want %s" % (p["id"], p["got"], p["want"]))
`

// comparePython compares all pairs in one Python process in a sandbox.
func comparePython(tb testing.TB, pairs []outputPair) []string {
	tb.Helper()
	return runPython(tb, compareScript, pairs)
}

// runPython runs script in a sandbox with the pairs as JSON lines on its
// stdin and returns the lines it prints.
func runPython(tb testing.TB, script string, pairs []outputPair) []string {
	tb.Helper()
	rt := testRuntime(tb)
	ctx := context.Background()
	s, err := rt.New(ctx, sandbox.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, p := range pairs {
		enc.Encode(p)
	}
	r, err := s.Exec(ctx, sandbox.Cmd{Args: []string{"/usr/bin/python3", "-c", script}, Stdin: &in})
	if err != nil || !r.Success() {
		tb.Fatalf("run Python check: %v %s %s", err, r.Describe(), r.Stderr)
	}
	out := strings.TrimSpace(string(r.Stdout))
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// TestFreshMatchesReuse checks that a runner reused across functions gives
// the traces a fresh fork per function (Options.Recycle 1, cwm trace func
// --fresh) gives.
func TestFreshMatchesReuse(t *testing.T) {
	fs := cruxFuncs(loadCrux(t))[:40]
	fresh, err := NewPool(context.Background(), testRuntime(t), Options{Workers: 2, Timeout: 10e9, Recycle: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	ctx := context.Background()
	want := traceAll(ctx, fresh, fs)
	got := traceAll(ctx, testPool(t), fs)
	for i := range fs {
		if want[i].Status != OK || got[i].Text != want[i].Text || got[i].Output != want[i].Output {
			t.Errorf("%s: reused runner gave %s %q, a fresh fork %s %q", fs[i].ID, got[i].Status, got[i].Output, want[i].Status, want[i].Output)
		}
	}
}
