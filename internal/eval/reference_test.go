package eval

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"cwm/internal/passk"
)

// readVectors reads a reference vector file of testdata/reference (see
// its README for the reference code and commit that made it).
func readVectors(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile("testdata/reference/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
}

// TestPyStripAgreesWithPython: pyIsSpace holds for exactly the code
// points Python's str.isspace() holds for, over all of Unicode.
func TestPyStripAgreesWithPython(t *testing.T) {
	var space []rune
	readVectors(t, "python_isspace.json", &space)
	want := map[rune]bool{}
	for _, r := range space {
		want[r] = true
	}
	agree := 0
	for r := rune(0); r <= 0x10ffff; r++ {
		if pyIsSpace(r) == want[r] {
			agree++
		} else {
			t.Errorf("pyIsSpace(%U) = %v, Python's isspace says %v", r, pyIsSpace(r), want[r])
		}
	}
	t.Logf("str.isspace: %d of %d code points agree", agree, 0x110000)
}

// TestCruxEvalPostprocessVectors: each completion's answer is the one
// CruxEval's postprocess_generation read from it, and the Scorer's
// verdict is evaluate_score's (dropped as an echo of the call, right,
// wrong).
func TestCruxEvalPostprocessVectors(t *testing.T) {
	var v struct {
		Problems []Problem `json:"problems"`
		Cases    []struct {
			Problem    string `json:"problem"`
			Mode       Mode   `json:"mode"`
			Completion string `json:"completion"`
			Answer     string `json:"answer"`
			Echoed     bool   `json:"echoed"`
			Correct    bool   `json:"correct"`
		} `json:"cases"`
	}
	readVectors(t, "cruxeval_postprocess.json", &v)
	byID := map[string]*Problem{}
	for i := range v.Problems {
		byID[v.Problems[i].ID] = &v.Problems[i]
	}
	s := newTestScorer(t, 2)
	verdicts := make([]Verdict, len(v.Cases))
	answers := make([]string, len(v.Cases))
	var wg sync.WaitGroup
	for i, c := range v.Cases {
		answers[i] = ExtractAnswer(c.Mode, c.Completion).Answer
		wg.Go(func() { verdicts[i], _ = s.Check(context.Background(), byID[c.Problem], answers[i]) })
	}
	wg.Wait()
	agree := 0
	for i, c := range v.Cases {
		ok := true
		if answers[i] != c.Answer {
			ok = false
			t.Errorf("ExtractAnswer(%s, %q) = %q, CruxEval's postprocessing reads %q", c.Mode, c.Completion, answers[i], c.Answer)
		}
		if (verdicts[i] == CallEchoed) != c.Echoed || (verdicts[i] == Pass) != c.Correct {
			ok = false
			t.Errorf("%s %q: answer %q scored %s, evaluate_score: echoed %v, correct %v", c.Mode, c.Completion, answers[i], verdicts[i], c.Echoed, c.Correct)
		}
		if ok {
			agree++
		}
	}
	t.Logf("CruxEval's postprocessing and scoring: %d of %d completions agree", agree, len(v.Cases))
}

// TestCountEchoVectors: with --count-echo drop, the per-problem pass@1
// and pass@5 and their means over the problems equal, to the last bit,
// what CruxEval's evaluate_score, pass_at_k and evaluate_generations
// computed on the same answers (scored here by the Scorer).
func TestCountEchoVectors(t *testing.T) {
	var v struct {
		Problem Problem `json:"problem"`
		Groups  []struct {
			Answers []string `json:"answers"`
			Results []bool   `json:"results"`
			PassAt1 float64  `json:"pass_at_1"`
			PassAt5 float64  `json:"pass_at_5"`
		} `json:"groups"`
		Summary struct {
			PassAt1 float64 `json:"pass_at_1"`
			PassAt5 float64 `json:"pass_at_5"`
		} `json:"summary"`
	}
	readVectors(t, "cruxeval_passk.json", &v)
	s := newTestScorer(t, 2)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	var b []byte
	for g, gr := range v.Groups {
		c, echoed := 0, 0
		for i, a := range gr.Answers {
			verdict, _ := s.Check(context.Background(), &v.Problem, a)
			l := Line{ID: fmt.Sprintf("sample_%d", g), Sample: i, Mode: Direct, Answer: a, Verdict: verdict, Correct: verdict == Pass}
			j, err := json.Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			b = append(append(b, j...), '\n')
			if l.Correct {
				c++
			}
			if verdict == CallEchoed {
				echoed++
			}
		}
		n, c := passk.Samples(len(gr.Answers), c, echoed, passk.EchoDrop)
		if n != len(gr.Results) || c != countTrue(gr.Results) {
			t.Errorf("group %d: n=%d c=%d, evaluate_score's results %v", g, n, c, gr.Results)
		}
		if p1, p5 := passk.Estimate(n, c, 1), passk.Estimate(n, c, 5); p1 != gr.PassAt1 || p5 != gr.PassAt5 {
			t.Errorf("group %d: pass@1 %v, pass@5 %v; CruxEval's %v, %v", g, p1, p5, gr.PassAt1, gr.PassAt5)
		}
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := SummarizeEcho(out, Direct, nil, passk.EchoDrop)
	if err != nil {
		t.Fatal(err)
	}
	if got1, got5 := sum.PassAt["1"]*100, sum.PassAt["5"]*100; got1 != v.Summary.PassAt1 || got5 != v.Summary.PassAt5 {
		t.Errorf("SummarizeEcho(drop): pass@1 %v, pass@5 %v; CruxEval's %v, %v", got1, got5, v.Summary.PassAt1, v.Summary.PassAt5)
	}
	// The paper's reading on the same lines: an echo is a wrong sample.
	wrong, err := Summarize(out, Direct, nil)
	if err != nil {
		t.Fatal(err)
	}
	if wrong.PassAt["1"] >= sum.PassAt["1"] || wrong.CountEcho != passk.EchoWrong {
		t.Errorf("Summarize: pass@1 %v (count_echo %q), want below drop's %v", wrong.PassAt["1"], wrong.CountEcho, sum.PassAt["1"])
	}
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// TestCruxEvalPublishedSamples rescores the output-prediction samples
// CruxEval publishes (CodeLlama-7B, temperature 0.2, ten per problem,
// testdata/cruxeval-samples) with the Scorer and wants every sample's
// verdict and the pass@1 and pass@5 CruxEval's scored file holds, to the
// last bit, with --count-echo drop.
func TestCruxEvalPublishedSamples(t *testing.T) {
	f, err := os.Open("testdata/cruxeval-samples/codellama-7b_temp0.2_output.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		PassAt1     float64             `json:"pass_at_1"`
		PassAt5     float64             `json:"pass_at_5"`
		Generations map[string][]string `json:"generations"`
		Scored      map[string][]bool   `json:"scored"`
	}
	if err := json.NewDecoder(zr).Decode(&v); err != nil {
		t.Fatal(err)
	}
	problems := CruxEval()
	lines := make([][]Line, len(problems))
	s := newTestScorer(t, 2)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range problems {
		p := &problems[i]
		gs := v.Generations[p.ID]
		if len(gs) == 0 {
			t.Fatalf("no published samples for %s", p.ID)
		}
		lines[i] = make([]Line, len(gs))
		for j, g := range gs {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				verdict, _ := s.Check(context.Background(), p, g)
				lines[i][j] = Line{ID: p.ID, Sample: j, Mode: Direct, Answer: g, Verdict: verdict, Correct: verdict == Pass}
			})
		}
	}
	wg.Wait()
	var b []byte
	agree, total := 0, 0
	for i, ls := range lines {
		var results []bool
		for _, l := range ls {
			j, err := json.Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			b = append(append(b, j...), '\n')
			if l.Verdict != CallEchoed {
				results = append(results, l.Correct)
			}
		}
		if countTrue(results) == 0 {
			results = make([]bool, len(ls))
		}
		// evaluate_score's list: the samples not dropped as echoes, or all
		// false when none is right.
		want := v.Scored[problems[i].ID]
		total += len(want)
		if len(results) != len(want) {
			t.Errorf("%s: %d results, CruxEval's scored file has %d", problems[i].ID, len(results), len(want))
			continue
		}
		for j := range want {
			if results[j] == want[j] {
				agree++
			} else {
				t.Errorf("%s sample %d: %q correct=%v, CruxEval's %v", problems[i].ID, j, ls[j].Answer, results[j], want[j])
			}
		}
	}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := SummarizeEcho(out, Direct, nil, passk.EchoDrop)
	if err != nil {
		t.Fatal(err)
	}
	p1, p5 := sum.PassAt["1"]*100, sum.PassAt["5"]*100
	if p1 != v.PassAt1 || p5 != v.PassAt5 {
		t.Errorf("pass@1 %v, pass@5 %v; CruxEval published %v, %v", p1, p5, v.PassAt1, v.PassAt5)
	}
	t.Logf("CodeLlama-7B's published samples: %d of %d verdicts agree; pass@1 %v (published %v), pass@5 %v (published %v)", agree, total, p1, v.PassAt1, p5, v.PassAt5)
}
