package selection

import (
	"context"
	"math"
	"strings"
	"testing"

	"cwm/internal/model"
	"cwm/internal/selection/selectiontest"
)

func TestPYes(t *testing.T) {
	lp := func(tok string, top ...model.TopLogprob) model.TokenLogprob {
		return model.TokenLogprob{Token: tok, Logprob: -0.01, Top: top}
	}
	tests := []struct {
		name string
		lps  []model.TokenLogprob
		want float64
		ok   bool
	}{
		{"both among the top", []model.TokenLogprob{lp("<"), lp("judgement"), lp(">"), {Token: "YES", Logprob: math.Log(0.6),
			Top: []model.TopLogprob{{Token: "YES", Logprob: math.Log(0.6)}, {Token: "NO", Logprob: math.Log(0.2)}}}}, 0.75, true},
		{"NO alone", []model.TokenLogprob{{Token: " NO", Logprob: -0.001}}, 0, true},
		{"no judgement", []model.TokenLogprob{lp("maybe")}, 0, false},
		{"no logprobs", nil, 0, false},
	}
	for _, tc := range tests {
		got, ok := PYes(tc.lps)
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("%s: PYes = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestVerifierPrompt(t *testing.T) {
	msgs := []model.Message{{Role: model.RoleSystem, Content: "sys"}, {Role: model.RoleUser, Content: "THE ISSUE"},
		{Role: model.RoleAssistant, Content: "I look", ToolCalls: []model.ToolCall{{ID: "1", Type: "function", Function: model.FunctionCall{Name: "bash", Arguments: `{"cmd":"ls"}`}}}},
		{Role: model.RoleTool, Content: strings.Repeat("x", 3*messageLimit)}}
	got, err := VerifierPrompt("snake_case is wrong", "diff --git a/x b/x", msgs)
	if err != nil {
		t.Fatal(err)
	}
	u := got[1].Content
	for _, want := range []string{"snake_case is wrong", "[ASSISTANT]\nI look\nbash({\"cmd\":\"ls\"})\n[/ASSISTANT]", "[... cut ...]", "[PATCH]\ndiff --git a/x b/x\n[/PATCH]", "Answer YES or NO"} {
		if !strings.Contains(u, want) {
			t.Errorf("verifier prompt lacks %q:\n%s", want, u)
		}
	}
	if strings.Contains(u, "THE ISSUE") || strings.Contains(u, "sys") && !strings.Contains(got[0].Content, "<judgement>") {
		t.Errorf("verifier prompt shows the trajectory's own prompt, or the system prompt asks for no judgement")
	}
	if len(u) > 2*messageLimit+2000 {
		t.Errorf("a long tool output was not cut: %d bytes", len(u))
	}
}

// TestSelectHybrid: when the generated tests cannot tell the shared wrong
// patch from the gold patch, best@k's tie rule (votes) picks the wrong
// one; the hybrid's verifier, which prefers the gold patch, picks it.
func TestSelectHybrid(t *testing.T) {
	sbs, e, _ := textkitEnv(t)
	tk, base := selectiontest.SnakeTask(t, e, "textkit__snake-hybrid")
	cands := selectiontest.EightCandidates(t, tk, base)
	srv := selectiontest.VerifierServer(t, selectiontest.WeakTests(), func(user string) float64 {
		if strings.Contains(user, `+    return "_"`) {
			return 0.9
		}
		return 0.2
	})
	c, err := model.NewClient(model.ClientConfig{BaseURL: srv.URL, Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Client: c, Verifier: c, Tests: 1, Keep: 5, Method: MethodHybrid, Curves: true}
	res, err := Select(context.Background(), sbs, cfg, Input{Task: tk, Env: e, Cands: cands})
	if err != nil {
		t.Fatal(err)
	}
	if res.Best != 3 || res.Hybrid == nil || *res.Hybrid != 0 || res.Winner != 0 {
		t.Fatalf("best %d hybrid %v winner %d; want best 3 (votes break the tie), hybrid and winner 0", res.Best, res.Hybrid, res.Winner)
	}
	if !strings.Contains(res.Why, "P(YES) 0.900") {
		t.Errorf("why %q, want the verifier's P(YES)", res.Why)
	}
	if p := res.Candidates[0].PYes; p == nil || math.Abs(*p-0.9) > 1e-9 {
		t.Errorf("gold P(YES) %v, want 0.9", p)
	}
	if p := res.Candidates[3].PYes; p == nil || math.Abs(*p-0.2) > 1e-9 {
		t.Errorf("wrong P(YES) %v, want 0.2", p)
	}
	if p := res.Candidates[1].PYes; p != nil {
		t.Errorf("the breaker, not tied at the best score, was verified (%v)", *p)
	}
	last := res.Curve[len(res.Curve)-1]
	if last.Hybrid == nil || *last.Hybrid != 1 || last.Best != 0 || last.Pass != 1 {
		t.Errorf("curve at k=8: %+v (hybrid %v); want hybrid 1, best 0, pass 1", last, last.Hybrid)
	}
}
