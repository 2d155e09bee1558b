package tracer

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/traceline"
)

// generatorCases are functions, each marked "# case NAME" in its code,
// and the reply a scripted model gives for it: a good generator and every
// way one can fail. Printing a gigabyte and returning is not a failure:
// the program's output is counted, not kept.
var generatorCases = []struct {
	name, reply, status string
}{
	{"good", "Here:\n```python\ndef generate_inputs():\n    return [(1,), (2,), (1,), (5,), (-3,), (20,)]\n```\n", GenOK},
	{"no-code", "I would call it with small numbers.", GenNoCode},
	{"syntax", "```python\ndef generate_inputs(:\n    return [(1,)]\n```", "syntax_error"},
	{"loops", "```python\ndef generate_inputs():\n    while True:\n        pass\n```", GenTimeout},
	{"prints", "```python\ndef generate_inputs():\n    while True:\n        print('x' * 65536)\n```", GenTimeout},
	{"prints-1gb", "```python\nimport sys\n\ndef generate_inputs():\n    s = 'x' * (1 << 20)\n    for _ in range(1024):\n        sys.stdout.write(s)\n    return [(1,)]\n```", GenOK},
	{"unpicklable", "```python\ndef generate_inputs():\n    return [(lambda: 1,), (lambda: 2,)]\n```", "unpicklable"},
	{"not-tuples", "```python\ndef generate_inputs():\n    return 5\n```", "not_tuples"},
	{"crashes", "```python\ndef generate_inputs():\n    return [(1 / 0,)]\n```", "crashed"},
	{"no-generator", "```python\ndef make_inputs():\n    return [(1,)]\n```", "no_generator"},
}

var caseMark = regexp.MustCompile(`# case ([a-z0-9-]+)`)

// TestModelInputs runs trace func with a scripted input model: the good
// generator's inputs are traced (deduplicated, within the model's share,
// the fuzzer filling the rest without repeating them), every failing one
// is a result with its reason on the function's line, counted in the
// summary, and a function the model server fails is set aside.
func TestModelInputs(t *testing.T) {
	replies := map[string]string{}
	var lines []string
	for _, c := range generatorCases {
		replies[c.name] = c.reply
		code := fmt.Sprintf("def f(x):  # case %s\n    if x > 10:\n        return 'big'\n    if x < 0:\n        return 'neg'\n    return 'small'\n", c.name)
		data, _ := json.Marshal(map[string]string{"id": c.name, "code": code, "input": "5"})
		lines = append(lines, string(data))
	}
	data, _ := json.Marshal(map[string]string{"id": "server-fails", "code": "def f(x):  # case server-fails\n    return x\n", "input": "1"})
	lines = append(lines, string(data))
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		m := caseMark.FindStringSubmatch(r.Issue())
		if m == nil || m[1] == "server-fails" {
			return modeltest.Reply{Status: 400, Error: "scripted failure"}
		}
		return modeltest.Reply{Content: replies[m[1]]}
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	client, err := model.NewClient(model.ClientConfig{BaseURL: srv.URL, Model: "scripted", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "funcs.jsonl"), filepath.Join(dir, "traces.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	funcs, err := ReadFuncs(in)
	if err != nil {
		t.Fatal(err)
	}
	run, err := NewFuncs(FuncsOptions{Funcs: funcs, In: in, Out: out, Fuzz: 4, Seed: 1, InputModel: client, ModelShare: 0.5, ModelConcurrency: 4,
		Pool: Options{Workers: 2, Timeout: 4 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := run.Run(context.Background(), testRuntime(t))
	if err != nil {
		t.Fatal(err)
	}
	wantGens := map[string]int{}
	for _, c := range generatorCases {
		wantGens[c.status]++
	}
	if diff := cmp.Diff(wantGens, sum.Generators); diff != "" {
		t.Errorf("generators by status (-want +got):\n%s", diff)
	}
	if sum.ModelKept != 3 || sum.ModelErrors != 1 || sum.ModelError == nil || !strings.Contains(sum.ModelError.Error(), "server-fails: model endpoint failed") {
		t.Errorf("model inputs kept %d, model errors %d (%v), want 3 (good's 2, prints-1gb's 1) and 1 naming server-fails", sum.ModelKept, sum.ModelErrors, sum.ModelError)
	}

	recs := map[string]Record{}
	calls := map[string]map[string]bool{} // by function: the calls traced
	raw, _ := os.ReadFile(out)
	var firstKeys []string
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var r Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		// Every line has the same keys, generator's included, so that a
		// loader inferring a schema per block sees one.
		var fields map[string]json.RawMessage
		json.Unmarshal([]byte(l), &fields)
		var gen map[string]json.RawMessage
		json.Unmarshal(fields["generator"], &gen)
		keys := append(slices.Sorted(maps.Keys(fields)), slices.Sorted(maps.Keys(gen))...)
		if firstKeys == nil {
			firstKeys = keys
		} else if diff := cmp.Diff(firstKeys, keys); diff != "" {
			t.Errorf("%s: keys differ from the first line's (-first +this):\n%s", r.ID, diff)
		}
		recs[r.ID] = r
		fn := r.ID
		if r.FuzzOf != "" {
			fn = r.FuzzOf
		}
		if calls[fn] == nil {
			calls[fn] = map[string]bool{}
		}
		if calls[fn][r.Call] {
			t.Errorf("%s: the call %s is traced twice", fn, r.Call)
		}
		calls[fn][r.Call] = true
		var src traceline.Source
		switch {
		case strings.Contains(r.ID, "/model-"):
			src = traceline.Model
		case strings.Contains(r.ID, "/fuzz-"):
			src = traceline.Fuzz
		default:
			src = traceline.Given
		}
		if r.InputSource != src {
			t.Errorf("%s: input_source %q, want %q", r.ID, r.InputSource, src)
		}
	}
	if _, ok := recs["server-fails"]; ok {
		t.Errorf("the function the model server failed was written; want it set aside")
	}
	for _, c := range generatorCases {
		g := recs[c.name].Generator
		if g.Status != c.status || g.Status != GenOK && (g.Detail == "" || g.Kept != 0) {
			t.Errorf("%s: generator %+v, want status %s with a detail", c.name, g, c.status)
		}
	}
	if r := recs["unpicklable"].Generator.Rejected; r != (Rejected{Unpicklable: 2}) {
		t.Errorf("unpicklable: rejected %+v, want 2 unpicklable", r)
	}
	good := recs["good"].Generator
	if good.Inputs != 4 || good.Kept != 2 {
		t.Errorf("good: %d distinct new inputs, %d kept; want 4 (5 is the given one, 1 is repeated) and 2 (the share)", good.Inputs, good.Kept)
	}
	for k, call := range []string{"f(1)", "f(2)"} {
		r := recs[fmt.Sprintf("good/model-%d", k+1)]
		if r.Call != call || r.Input != strings.Trim(call, "f()") || r.Status != traceline.OK || r.FuzzOf != "good" || r.Output != "'small'" {
			t.Errorf("good/model-%d: call %q, input %q, status %s, fuzz_of %q, output %q", k+1, r.Call, r.Input, r.Status, r.FuzzOf, r.Output)
		}
	}
	if n := len(calls["good"]); n < 3 || n > 5 {
		t.Errorf("good: %d calls traced, want the given one, 2 of the model and at most 2 fuzzed", n)
	}
}

// TestExtractCode: the generator's code is the reply's python block.
func TestExtractCode(t *testing.T) {
	cases := []struct{ reply, want string }{
		{"```python\nx = 1\n```", "x = 1\n"},
		{"text\n```\ny = 2\n```\nmore", "y = 2\n"},
		{"```text\nnot this\n```\n```py\nz = 3\n```", "z = 3\n"},
		{"```json\n[1]\n```", "[1]\n"},
		{"no block", ""},
	}
	for _, c := range cases {
		if got := extractCode(c.reply); got != c.want {
			t.Errorf("extractCode(%q) = %q, want %q", c.reply, got, c.want)
		}
	}
}

// TestFuncItem: a fuzzed or model-written input's line belongs to its
// function's item, which decided its shard (cwm merge checks it).
func TestFuncItem(t *testing.T) {
	cases := map[string]string{
		`{"id":"sample_1"}`:          "sample_1",
		`{"id":"sample_1/fuzz-3"}`:   "sample_1",
		`{"id":"sample_1/model-12"}`: "sample_1",
		`{"id":"a/model-x"}`:         "a/model-x",
	}
	for line, want := range cases {
		if got, err := FuncStage.ItemKey([]byte(line)); got != want || err != nil {
			t.Errorf("FuncStage.ItemKey(%s) = %q, %v, want %q", line, got, err, want)
		}
	}
}
