package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cwm/internal/model/modeltest"
	"cwm/internal/sandbox"
	"cwm/internal/testtime"
)

// TestHaltLabels checks every label of the starter set by running it in a
// sandbox: each terminating program ends within 1 s of its own time (the
// interpreter's start aside), normally or by the exception its argument
// names; each diverging one is still running at 5 s. The diverging programs run at once, so the test takes about 5 s
// plus the terminating ones' time.
func TestHaltLabels(t *testing.T) {
	ps := HaltPrograms()
	req := map[string]any{"terminates": map[string]string{}, "diverges": map[string]string{}, "timeout": HaltTimeout.Seconds()}
	n := map[string]int{}
	for _, p := range ps {
		req[p.Label].(map[string]string)[p.ID] = p.Code
		n[p.Label]++
		if strings.Contains(p.Code, "# halt:") || p.Why == "" {
			t.Errorf("%s: label left in the code, or no argument for it", p.ID)
		}
		if (p.Label == Terminates) != strings.HasPrefix(p.ID, "t") {
			t.Errorf("%s: labelled %s", p.ID, p.Label)
		}
	}
	if len(ps) < 60 || n[Terminates] != n[Diverges] {
		t.Fatalf("%d programs, %v", len(ps), n)
	}
	script, err := os.ReadFile("testdata/halt_check.py")
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(req)
	res, err := testRT.Run(context.Background(), sandbox.Config{}, sandbox.Cmd{Args: []string{"python3", "-c", string(script)}, Stdin: bytes.NewReader(in)})
	if err != nil || !res.Success() {
		t.Fatalf("%v %s: %s", err, res.Describe(), res.Stderr)
	}
	var got struct {
		Terminates map[string]struct {
			Seconds float64
			Ended   string
		}
		Diverges map[string]struct{ Running bool }
	}
	if err := json.Unmarshal(res.Stdout, &got); err != nil {
		t.Fatal(err)
	}
	limit := testtime.Scale(time.Second).Seconds() // 1 s, scaled on slow machines
	for _, p := range ps {
		if p.Label == Terminates {
			r, ok := got.Terminates[p.ID]
			if !ok || r.Seconds > limit {
				t.Errorf("%s: terminating program took %.2fs (limit 1 s)", p.ID, r.Seconds)
			}
			if want := endsBy[p.ID]; ok && r.Ended != want {
				t.Errorf("%s: ended by %s, want %s", p.ID, r.Ended, want)
			}
			continue
		}
		if r, ok := got.Diverges[p.ID]; !ok || !r.Running {
			t.Errorf("%s: diverging program ended before %v", p.ID, HaltTimeout)
		}
	}
}

// endsBy is how each terminating program ends: normally, or by the
// exception its argument names.
var endsBy = map[string]string{}

func init() {
	for _, p := range HaltPrograms() {
		if p.Label == Terminates {
			endsBy[p.ID] = "ok"
		}
	}
	endsBy["t05_recursion_error"] = "RecursionError"
	endsBy["t19_stop_iteration"] = "StopIteration"
	endsBy["t23_sys_exit"] = "SystemExit"
	endsBy["t32_exception_in_callee"] = "ValueError"
}

// TestHaltOracle runs cwm eval halt on six programs against a model right
// on four and wants the exact confusion, precision and recall; a
// "diverges" answer is confirmed by running the program for 5 s.
func TestHaltOracle(t *testing.T) {
	all := HaltPrograms()
	pick := func(ids ...string) []HaltProgram {
		var ps []HaltProgram
		for _, id := range ids {
			for _, p := range all {
				if p.ID == id {
					ps = append(ps, p)
				}
			}
		}
		return ps
	}
	ps := pick("t01_countdown", "t05_recursion_error", "t28_float_halving_to_zero", "n01_while_true", "n03_float_equality", "n09_collatz_negative_cycle")
	answers := map[string]string{ // id -> the model's answer
		"t01_countdown": "terminates", "t05_recursion_error": "diverges", "t28_float_halving_to_zero": "garbled",
		"n01_while_true": "diverges", "n03_float_equality": "diverges", "n09_collatz_negative_cycle": "terminates",
	}
	replies := map[string]string{}
	for _, p := range ps {
		pr, err := BuildHaltPrompt(Direct, Completions, &p, Think{})
		if err != nil {
			t.Fatal(err)
		}
		replies[pr.Text] = answers[p.ID]
	}
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply { return modeltest.Text(replies[r.Prompt]) }, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	runner, err := NewScorer(context.Background(), testRT, 2, HaltTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer runner.Close()
	out := filepath.Join(t.TempDir(), "halt.jsonl")
	sum, err := RunHalt(context.Background(), HaltOptions{Programs: ps, Mode: Direct, API: Completions,
		Client: testClient(t, srv.URL), Runner: runner, Out: out, Concurrency: 6})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Samples != 6 || sum.Correct != 3 || sum.Unconfirmed != 0 {
		t.Fatalf("summary %+v", sum)
	}
	// terminates: answered once (right); labelled 3 -> precision 1, recall 1/3.
	// diverges: answered 3 times (2 right); labelled 3 -> precision 2/3, recall 2/3.
	want := fmt.Sprint(map[string]ClassStats{
		Terminates: {Precision: 0.5, Recall: 1.0 / 3, Predicted: 2, Actual: 3},
		Diverges:   {Precision: 2.0 / 3, Recall: 2.0 / 3, Predicted: 3, Actual: 3},
	})
	if got := fmt.Sprint(sum.Classes); got != want {
		t.Errorf("classes %s, want %s", got, want)
	}
	if sum.Confusion[Terminates][""] != 1 || sum.Confusion[Diverges][Terminates] != 1 || sum.Constant[Terminates] != 0.5 {
		t.Errorf("confusion %v, constant %v", sum.Confusion, sum.Constant)
	}
	var buf bytes.Buffer
	sum.Write(&buf)
	if !strings.Contains(buf.String(), "accuracy 50.0% (constant: terminates 50.0%, diverges 50.0%)") {
		t.Errorf("summary:\n%s", buf.String())
	}
}
