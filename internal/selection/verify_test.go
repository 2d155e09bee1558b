package selection

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
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

// TestSelectBestVerifier: when the generated tests cannot tell the shared
// wrong patch from the gold patch, best@k's tie rule (votes) picks the
// wrong one; best-verifier's verifier, which prefers the gold patch,
// picks it.
func TestSelectBestVerifier(t *testing.T) {
	sbs, e, _ := textkitEnv(t)
	tk, base := selectiontest.SnakeTask(t, e, "textkit__snake-hybrid")
	cands := selectiontest.EightCandidates(t, tk, base)
	c := joinVerifier(t, nil)
	cfg := Config{Client: c, Verifier: c, Tests: 1, Keep: 5, Method: MethodBestVerifier, Curves: true}
	res, err := Select(context.Background(), sbs, cfg, Input{Task: tk, Env: e, Cands: cands})
	if err != nil {
		t.Fatal(err)
	}
	if res.Best != 3 || res.BestVerifier == nil || *res.BestVerifier != 0 || res.Winner != 0 || res.Hybrid != nil {
		t.Fatalf("best %d best-verifier %v hybrid %v winner %d; want best 3 (votes break the tie), best-verifier and winner 0", res.Best, res.BestVerifier, res.Hybrid, res.Winner)
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
	if last.BestVerifier == nil || *last.BestVerifier != 1 || last.Best != 0 || last.Pass != 1 || last.Hybrid != nil {
		t.Errorf("curve at k=8: %+v (best-verifier %v); want best-verifier 1, best 0, pass 1", last, last.BestVerifier)
	}
}

// TestSelectHybrid: R2E-Gym's hybrid on the eight candidates, with tests
// that cannot tell the wrong patch from the gold one and a verifier that
// prefers every patch that joins with "_" (the gold patch, its other
// formatting and the patch that also breaks a regression test): its top
// three by P(YES) are those, the most regression tests leave the gold
// class's two, and the pick is the first of them. Each eligible
// candidate is verified, once per class, or once per candidate with
// VerifyEach.
func TestSelectHybrid(t *testing.T) {
	sbs, e, _ := textkitEnv(t)
	tk, base := selectiontest.SnakeTask(t, e, "textkit__snake-r2e")
	cands := selectiontest.EightCandidates(t, tk, base)
	for _, each := range []bool{false, true} {
		var asked atomic.Int32
		c := joinVerifier(t, &asked)
		cfg := Config{Client: c, Verifier: c, VerifyEach: each, Tests: 1, Keep: 5, Method: MethodHybrid, Curves: true}
		res, err := Select(context.Background(), sbs, cfg, Input{Task: tk, Env: e, Cands: cands})
		if err != nil {
			t.Fatal(err)
		}
		if res.Hybrid == nil || *res.Hybrid != 0 || res.Winner != 0 || res.MethodVersion != MethodVersions[MethodHybrid] {
			t.Fatalf("VerifyEach %v: hybrid %v winner %d version %q; want 0, 0, %q", each, res.Hybrid, res.Winner, res.MethodVersion, MethodVersions[MethodHybrid])
		}
		if !strings.Contains(res.Why, "R2E-Gym's hybrid: of the 3 highest P(YES) of 6") || !strings.Contains(res.Why, "2 candidates tied there") {
			t.Errorf("VerifyEach %v: why %q", each, res.Why)
		}
		for i, want := range []float64{0.9, 0.9, 0.9, 0.2, 0.2, 0.2, -1, -1} {
			p := res.Candidates[i].PYes
			if want < 0 && p != nil || want >= 0 && (p == nil || math.Abs(*p-want) > 1e-9) {
				t.Errorf("VerifyEach %v: candidate %d P(YES) %v, want %v", each, i, p, want)
			}
		}
		if wantAsked := map[bool]int32{false: 3, true: 6}[each]; asked.Load() != wantAsked {
			t.Errorf("VerifyEach %v: the verifier was asked %d times, want %d", each, asked.Load(), wantAsked)
		}
		last := res.Curve[len(res.Curve)-1]
		if last.Hybrid == nil || *last.Hybrid != 1 || last.BestVerifier != nil {
			t.Errorf("VerifyEach %v: curve at k=8: %+v; want hybrid 1", each, last)
		}
	}
}

// joinVerifier is a model that writes the weak test and judges a patch
// that joins with "_" P(YES) 0.9, any other 0.2, counting the judgements
// in asked when it is not nil.
func joinVerifier(t *testing.T, asked *atomic.Int32) *model.Client {
	srv := selectiontest.VerifierServer(t, selectiontest.WeakTests(), func(user string) float64 {
		if asked != nil {
			asked.Add(1)
		}
		if strings.Contains(user, `+    return "_"`) {
			return 0.9
		}
		return 0.2
	})
	c, err := model.NewClient(model.ClientConfig{BaseURL: srv.URL, Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
