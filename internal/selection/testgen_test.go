package selection

import (
	"context"
	"strings"
	"testing"
	"time"

	"cwm/internal/agent"
	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/selection/selectiontest"
)

// TestSelectTestgenAgent: with --testgen agent, a scripted agent writes
// test_issue.py in the unpatched repository with the create tool and
// submits it, one episode per test. Episode 0's test reproduces the issue
// and is kept; episode 1's prints "Issue reproduced" too but never names
// "Issue resolved", so CWM's filter drops it. best@k then picks the gold
// patch with the one kept test.
func TestSelectTestgenAgent(t *testing.T) {
	sbs, e, _ := textkitEnv(t)
	tk, base := selectiontest.SnakeTask(t, e, "textkit__snake-testgen")
	cands := selectiontest.EightCandidates(t, tk, base)
	good := "from textkit.case import snake_case\n\nif snake_case(\"parseHTTPResponse\") == \"parse_http_response\":\n" +
		"    print(\"Issue resolved\")\nelse:\n    print(\"Issue reproduced\")\n"
	bad := "print(\"Issue reproduced\")\n"
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		code := good
		if r.Seed != nil && *r.Seed == 1 {
			code = bad
		}
		switch r.Turn() {
		case 0:
			return modeltest.Tool("create", "test_issue.py\n"+code)
		case 1:
			return modeltest.Tool("submit", "test_issue.py")
		}
		return modeltest.Text("## Summary\nThe test calls snake_case on the issue's example.")
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	c, err := model.NewClient(model.ClientConfig{BaseURL: srv.URL, Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Client: c, Tests: 2, Keep: 5, Method: MethodBest, Testgen: TestgenAgent,
		TestgenLimits: agent.Limits{MaxTurns: 8, WallTime: 5 * time.Minute}}
	res, err := Select(context.Background(), sbs, cfg, Input{Task: tk, Env: e, Cands: cands})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tests) != 2 || res.Tests[0].Code != good || res.Tests[1].Code != bad {
		t.Fatalf("tests %+v; want the two submitted files", res.Tests)
	}
	if res.Tests[0].Unpatched != Reproduced || res.Tests[1].Unpatched != Other || !strings.Contains(res.Tests[1].Dropped, "CWM's filter") {
		t.Errorf("verdicts %s, %s (%s); want reproduced, and other by CWM's filter", res.Tests[0].Unpatched, res.Tests[1].Unpatched, res.Tests[1].Dropped)
	}
	if res.Reproducing != 1 || res.Broken != 1 || len(res.Kept) != 1 || res.Kept[0] != 0 || res.Prompt != testgenInstruction {
		t.Errorf("reproducing %d broken %d kept %v prompt %.40q; want 1, 1, [0], the test-generation instruction", res.Reproducing, res.Broken, res.Kept, res.Prompt)
	}
	if res.Best != 0 || res.Winner != 0 {
		t.Errorf("best %d winner %d, want the gold patch 0", res.Best, res.Winner)
	}
	// The episodes saw CWM's test-generation prompt with the issue, and
	// its feedback on the submitted test.
	var first, feedback bool
	for _, r := range srv.Requests() {
		if u := r.Issue(); strings.Contains(u, "generate a test (`test_issue.py`)") && strings.Contains(u, tk.ProblemStatement) {
			first = true
		}
		for _, m := range r.Messages {
			if strings.Contains(m.Content, "Review the following test which is marked as a submission:\n\n<submission>\n"+good) {
				feedback = true
			}
		}
	}
	if !first || !feedback {
		t.Errorf("test-generation prompt seen %v, submission feedback seen %v; want both", first, feedback)
	}
}
