package search

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cwm/internal/agent"
	"cwm/internal/env"
	"cwm/internal/env/envtest"
	"cwm/internal/episode/episodetest"
	"cwm/internal/golden"
	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/sandbox"
	"cwm/internal/task"
	"cwm/internal/testrun"
	"cwm/internal/trajectory"

	"github.com/google/go-cmp/cmp"
)

// wrongEdit "fixes" add the wrong way; fixEdit undoes the bug.
const (
	wrongEdit = "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\ndef add(a, b):\n    return b - a\n>>>>>>> REPLACE"
	fixEdit   = "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\ndef add(a, b):\n    return a + b\n>>>>>>> REPLACE"
)

// policy is a scripted policy whose greedy reply (seed 0) to the task is
// the wrong fix and whose second sample (seed 1) is the right one; then,
// whatever the seed, it writes the diff to a file and submits it.
func policy(r *modeltest.Request) modeltest.Reply {
	switch r.Turn() {
	case 0:
		if r.Seed != nil && *r.Seed == 1 {
			return modeltest.Tool("edit", fixEdit)
		}
		return modeltest.Tool("edit", wrongEdit)
	case 1:
		return modeltest.Tool("bash", "git diff > /tmp/fix.patch")
	}
	return modeltest.Tool("submit", "/tmp/fix.patch")
}

// value scores a state whose diff holds the right line above one that
// does not, and must be asked with the value prompt.
func value(r *modeltest.Request) modeltest.Reply {
	if len(r.Messages) != 2 || r.Messages[0].Content != valueSystem || !strings.Contains(r.Issue(), "## Diff") {
		return modeltest.Text("not a value prompt")
	}
	if strings.Contains(r.Issue(), "+    return a + b") {
		return modeltest.Text("0.9")
	}
	return modeltest.Text("0.2")
}

type harness struct {
	opts Options
	task *task.Task
	env  *env.Env
	pol  *modeltest.Server
	val  *modeltest.Server
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	h := &harness{}
	client := func(script modeltest.Script, name string) (*modeltest.Server, *model.Client) {
		srv, err := modeltest.Start(script, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		c, err := model.NewClient(model.ClientConfig{BaseURL: srv.URL, Model: name, MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		return srv, c
	}
	var pc, vc *model.Client
	h.pol, pc = client(policy, "policy")
	h.val, vc = client(value, "value")
	p, err := agent.NewProtocol("cwm", "")
	if err != nil {
		t.Fatal(err)
	}
	layer, tk := episodetest.CalcRepo(t)
	// The grading runs "python", which the venv of a built environment
	// provides: the host's python3 stands in for it.
	if err := os.MkdirAll(filepath.Join(layer, "venv", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/bin/python3", filepath.Join(layer, "venv", "bin", "python")); err != nil {
		t.Fatal(err)
	}
	h.task, h.env = tk, envtest.Put(t, t.TempDir(), tk.EnvID, layer)
	// The grading runs the hidden test by the environment's test command.
	if h.env.TestCommand, err = testrun.Parse("python3 -m unittest"); err != nil {
		t.Fatal(err)
	}
	h.opts = Options{Sandboxes: env.NewSandboxes(rt), Policy: pc, Value: vc, Protocol: p, Width: 2, Depth: 3,
		BudgetCalls: 40, BudgetExecs: 40, Limits: agent.Limits{CommandTimeout: 30 * time.Second}}
	return h
}

// Beam search and MCTS find the fixing patch, through the policy's second
// sample, that the greedy rollout (width 1) misses; a budget that runs out
// ends the search with what it has, and says so.
func TestSearchFindsWhatGreedyMisses(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		name  string
		algo  string
		width int
		calls int
		found bool
		// rewards are those of the submitted nodes, in tree order.
		rewards   []float64
		exhausted string
		wantNodes int
	}{
		{name: "greedy", algo: Beam, width: 1, calls: 40, rewards: []float64{0}, wantNodes: 4},
		// Both first replies are kept (width 2) and the right one, ranked
		// first by the value model, submits first: the search stops there.
		{name: "beam", algo: Beam, width: 2, calls: 40, found: true, rewards: []float64{1}},
		{name: "mcts", algo: MCTS, width: 2, calls: 40, found: true, rewards: []float64{1}},
		// Two calls: the wrong fix and its value; the third is refused.
		{name: "mcts budget", algo: MCTS, width: 2, calls: 2, exhausted: "model_calls", wantNodes: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := h.opts
			o.Algo, o.Width, o.BudgetCalls = tc.algo, tc.width, tc.calls
			res, err := Run(context.Background(), &o, h.task, h.env)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			s := res.Summary
			if s.Exhausted != tc.exhausted {
				t.Errorf("exhausted %q, want %q", s.Exhausted, tc.exhausted)
			}
			if tc.wantNodes > 0 && s.Nodes != tc.wantNodes {
				t.Errorf("%d nodes, want %d", s.Nodes, tc.wantNodes)
			}
			if s.Nodes != len(res.Tree) || s.ModelCalls > tc.calls || s.Execs > o.BudgetExecs {
				t.Errorf("summary %+v over a tree of %d nodes breaks its budgets", s, len(res.Tree))
			}
			if tc.algo == MCTS && tc.exhausted == "" {
				// UCB1's path through the tree, visits and means included.
				var b strings.Builder
				for _, n := range res.Tree {
					line, err := json.Marshal(n)
					if err != nil {
						t.Fatal(err)
					}
					b.Write(append(line, '\n'))
				}
				golden.Check(t, "testdata/mcts_tree.jsonl", b.String())
			}
			if tc.exhausted != "" {
				if res.Best.Reward != nil {
					t.Errorf("best of an exhausted search has reward %v, want none (nothing submitted)", *res.Best.Reward)
				}
				return
			}
			var rewards []float64
			for _, n := range res.Tree {
				if n.Reward != nil {
					rewards = append(rewards, *n.Reward)
				}
			}
			if diff := cmp.Diff(tc.rewards, rewards); diff != "" {
				t.Errorf("rewards of the submitted nodes (-want +got):\n%s", diff)
			}
			if !tc.found {
				// The greedy path's rejected patch ranks below states not
				// yet graded: the best is not a known-wrong submission.
				if res.Best.Reward != nil && *res.Best.Reward > 0 {
					t.Errorf("greedy best reward %v, want no resolved patch", *res.Best.Reward)
				}
				return
			}
			if res.Best.Reward == nil || *res.Best.Reward != 1 || res.Best.Resolved == nil || !*res.Best.Resolved {
				t.Fatalf("best reward %v, want 1 (patch %q)", res.Best.Reward, res.Best.Patch)
			}
			if res.Best.SubmittedPatch == nil || !strings.Contains(*res.Best.SubmittedPatch, "+    return a + b") {
				t.Errorf("best submitted patch %v, want the fix", res.Best.SubmittedPatch)
			}
			if n := len(res.Best.Steps); n != 3 || res.Best.Turns != 3 || res.Best.ExitReason != trajectory.ExitSubmitted {
				t.Errorf("best trajectory has %d steps over %d turns, exit %q; want 3, 3, submitted", n, res.Best.Turns, res.Best.ExitReason)
			}
			if s.Gradings < 1 || s.MaxDepth != 3 {
				t.Errorf("summary %+v: want a grading and depth 3", s)
			}
		})
	}
	for _, r := range h.val.Requests() {
		if strings.Contains(r.Issue(), h.task.FailToPass[0]) {
			t.Errorf("the value prompt names the hidden tests: %q", r.Issue())
		}
	}
}

func TestParseValue(t *testing.T) {
	cases := []struct {
		in   string
		want float64
		err  bool
	}{
		{in: "0.75", want: 0.75},
		{in: " 1\n", want: 1},
		{in: "about .5 I think", want: 0.5},
		{in: "1.5", err: true},
		{in: "-0.1", err: true},
		{in: "likely", err: true},
	}
	for _, c := range cases {
		got, err := parseValue(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("parseValue(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.err)
		}
	}
}

// The lines of tree.jsonl and the entries of summary.json, every field set.
func TestFormats(t *testing.T) {
	golden.CheckJSON(t, "testdata/node.json", golden.Filled[Node]())
	golden.CheckJSON(t, "testdata/summary.json", golden.Filled[Summary]())
}

// MCTS with rollouts evaluates each new child by playing the policy on
// from it: a rollout that submits is graded for real (the right fix's
// ends the search, its end the answer), one that stops short is scored
// by the value model where it ended; the rollouts' calls and executions
// count in the budgets.
func TestMCTSRollouts(t *testing.T) {
	h := newHarness(t)
	one, zero := 1.0, 0.0
	cases := []struct {
		name      string
		rollout   int
		calls     int
		exhausted string
		// nodes are the tree's children of the root: rollout replies,
		// rollout reward, value.
		nodes                    []Node
		modelCalls, execs, value int
		best                     *float64
	}{
		// Expansion and two rollout replies (git diff, submit) per child:
		// the wrong fix's rollout is graded 0, the fix's 1.
		{name: "to the submission", rollout: 3, calls: 40,
			nodes:      []Node{{Rollout: 2, RolloutReward: &zero}, {Rollout: 2, RolloutReward: &one, Value: 1}},
			modelCalls: 6, execs: 2 + 4 + 2, best: &one},
		// One rollout reply (git diff): the value model scores its end,
		// the wrong diff's 0.2; the next child's rollout finds the budget
		// spent.
		{name: "value at the end", rollout: 1, calls: 4, exhausted: "model_calls",
			nodes:      []Node{{Rollout: 1, Value: 0.2}},
			modelCalls: 4, execs: 3, value: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := h.opts
			o.Algo, o.Width, o.Rollout, o.BudgetCalls = MCTS, 2, tc.rollout, tc.calls
			res, err := Run(context.Background(), &o, h.task, h.env)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			var got []Node
			for _, n := range res.Tree[1:] {
				got = append(got, Node{Rollout: n.Rollout, RolloutReward: n.RolloutReward, Value: n.Value})
			}
			if diff := cmp.Diff(tc.nodes, got); diff != "" {
				t.Errorf("root's children (-want +got):\n%s", diff)
			}
			s := res.Summary
			if s.Exhausted != tc.exhausted || s.ModelCalls != tc.modelCalls || s.Execs != tc.execs || s.ValueCalls != tc.value {
				t.Errorf("summary %+v: want exhausted %q, %d model calls, %d executions, %d value calls",
					s, tc.exhausted, tc.modelCalls, tc.execs, tc.value)
			}
			if diff := cmp.Diff(tc.best, res.Best.Reward); diff != "" {
				t.Errorf("best reward (-want +got):\n%s", diff)
			}
			if tc.best != nil && (s.BestNode != 2 || res.Best.Turns != 3 || res.Best.SubmittedPatch == nil ||
				!strings.Contains(*res.Best.SubmittedPatch, "+    return a + b")) {
				t.Errorf("best node %d, %d turns, patch %v: want node 2's rollout, 3 turns, the fix", s.BestNode, res.Best.Turns, res.Best.SubmittedPatch)
			}
		})
	}
}
