package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"

	"cwm/internal/sandbox"
)

func newTestScorer(t *testing.T, workers int) *Scorer {
	t.Helper()
	s, err := NewScorer(context.Background(), testRT, workers, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestScorerAgainstReference scores hand-made answers with the Scorer and
// with CruxEval's rule restated in Python (testdata/reference_rule.py, run
// in a sandbox) and wants the same verdict for each, and the verdict the
// case names.
func TestScorerAgainstReference(t *testing.T) {
	p := Problem{ID: "x", Code: "def f(s):\n    return s + \"a\"", Input: `"x9j"`, Output: `'x9ja'`}
	lst := Problem{ID: "l", Code: "def f(n):\n    return [i * i for i in range(n)]", Input: "4", Output: "[0, 1, 4, 9]"}
	cases := []struct {
		name   string
		p      Problem
		answer string
		want   Verdict
	}{
		{"literal", p, `"x9ja"`, Pass},
		{"other quotes", p, `'x9ja'`, Pass},
		{"wrong", p, `"x9j"`, Fail},
		{"empty answer", p, ``, Fail},
		{"trailing comment", p, `"x9ja" # done`, Pass},
		{"trailing text", p, `"x9ja" is the output`, Fail},
		{"call echoed", p, `f("x9j")`, CallEchoed},
		{"call echoed inside", p, `f("x9j") + ""`, CallEchoed},
		{"call spelled otherwise", p, `f('x9j')`, Pass},
		{"non-literal expression", p, `"x9" + "ja"`, Pass},
		{"assert message", p, `"x9ja", "anything"`, Pass},
		{"list", lst, `[0, 1, 4, 9]`, Pass},
		{"tuple is not a list", lst, `(0, 1, 4, 9)`, Fail},
		{"non-literal list", lst, `[i ** 2 for i in range(4)]`, Pass},
		{"raises", lst, `[0, 1, 4, 9][7]`, Fail},
		{"timeout", p, `__import__("time").sleep(30) or "x9ja"`, Timeout},
		{"statement after", p, "\"x9ja\"\nwhile True: pass", Timeout},
	}
	s := newTestScorer(t, 2)
	got := make([]Verdict, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Go(func() { got[i], _ = s.Check(context.Background(), &c.p, c.answer) })
	}
	// The reference, meanwhile, in its own sandbox.
	type refCase struct {
		Code   string `json:"code"`
		Input  string `json:"input"`
		Output string `json:"output"`
		Answer string `json:"answer"`
	}
	var in []refCase
	for _, c := range cases {
		in = append(in, refCase{c.p.Code, c.p.Input, c.p.Output, c.answer})
	}
	script, err := os.ReadFile("testdata/reference_rule.py")
	if err != nil {
		t.Fatal(err)
	}
	stdin, _ := json.Marshal(in)
	res, err := testRT.Run(context.Background(), sandbox.Config{}, sandbox.Cmd{
		Args: []string{"python3", "-c", string(script)}, Stdin: bytes.NewReader(stdin)})
	wg.Wait()
	if err != nil || !res.Success() {
		t.Fatalf("reference: %v %s: %s", err, res.Describe(), res.Stderr)
	}
	var ref []bool
	if err := json.Unmarshal(res.Stdout, &ref); err != nil || len(ref) != len(cases) {
		t.Fatalf("reference printed %q: %v", res.Stdout, err)
	}
	for i, c := range cases {
		if got[i] != c.want {
			t.Errorf("%s: answer %q scored %s, want %s", c.name, c.answer, got[i], c.want)
		}
		if (got[i] == Pass) != ref[i] {
			t.Errorf("%s: answer %q: scorer %s, CruxEval's rule says correct=%v", c.name, c.answer, got[i], ref[i])
		}
	}
}
