package selection

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"text/template"

	_ "embed"

	"cwm/internal/model"
)

// The execution-free verifier's prompts (R2E-Gym's structure: a judge
// that answers <judgement>YES</judgement> or NO about an issue, the
// agent's interaction log when there is one, and the final patch).
var (
	//go:embed prompts/verifier_system.md
	verifierSystem string
	//go:embed prompts/verifier_user.md
	verifierUser     string
	verifierTemplate = sync.OnceValue(func() *template.Template {
		return template.Must(template.New("verifier_user").Parse(verifierUser))
	})
)

// Caps on the interaction log shown to the verifier: each message cut in
// its middle to messageLimit bytes, and only the first and the last
// messages kept within logLimit.
const (
	messageLimit   = 4 << 10
	logLimit       = 64 << 10
	verifierTopLPs = 20
)

// VerifierPrompt is the verifier's messages for a patch to an issue, with
// the trajectory's messages (none for a prediction) as the interaction
// log.
func VerifierPrompt(problem, patch string, msgs []model.Message) ([]model.Message, error) {
	var b bytes.Buffer
	err := verifierTemplate().Execute(&b, struct{ Problem, Log, Patch string }{problem, interactionLog(msgs), patch})
	if err != nil {
		return nil, err
	}
	return []model.Message{{Role: model.RoleSystem, Content: verifierSystem}, {Role: model.RoleUser, Content: b.String()}}, nil
}

// interactionLog writes a trajectory's turns as R2E-Gym's verifier reads
// them: [ASSISTANT] blocks for the model, [USER] blocks for what came
// back. The system prompt and the first user message (the issue, shown
// on its own) are left out.
func interactionLog(msgs []model.Message) string {
	var parts []string
	seenUser := false
	for _, m := range msgs {
		switch {
		case m.Role == model.RoleSystem:
			continue
		case m.Role == model.RoleUser && !seenUser:
			seenUser = true
			continue
		}
		tag := "USER"
		if m.Role == model.RoleAssistant {
			tag = "ASSISTANT"
		}
		text := m.Content
		for _, tc := range m.ToolCalls {
			text += "\n" + tc.Function.Name + "(" + tc.Function.Arguments + ")"
		}
		parts = append(parts, "["+tag+"]\n"+cutMiddle(text, messageLimit)+"\n[/"+tag+"]")
	}
	// Keep the first and the last turns within logLimit: drop from the
	// middle.
	total := 0
	for _, p := range parts {
		total += len(p) + 2
	}
	for total > logLimit && len(parts) > 2 {
		mid := len(parts) / 2
		total -= len(parts[mid]) + 2
		parts = append(parts[:mid], parts[mid+1:]...)
	}
	return strings.Join(parts, "\n\n")
}

func cutMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n/2] + "\n[... cut ...]\n" + s[len(s)-n/2:]
}

// PYes is the verifier's probability that the patch is correct, from the
// first generated token that is YES or NO: exp(yes)/(exp(yes)+exp(no))
// over that position's top logprobs (a token missing there counts as
// log probability -10000, as R2E-Gym does). R2E-Gym reads a fixed
// position (the fifth token, after "<judgement>"); looking for the token
// keeps the reading right whatever the tokenizer. ok is false when no
// token is YES or NO.
func PYes(lps []model.TokenLogprob) (p float64, ok bool) {
	for _, t := range lps {
		tok := strings.TrimSpace(t.Token)
		if tok != "YES" && tok != "NO" {
			continue
		}
		yes, no := -10000.0, -10000.0
		for _, alt := range t.Top {
			switch strings.TrimSpace(alt.Token) {
			case "YES":
				yes = max(yes, alt.Logprob)
			case "NO":
				no = max(no, alt.Logprob)
			}
		}
		if tok == "YES" {
			yes = max(yes, t.Logprob)
		} else {
			no = max(no, t.Logprob)
		}
		return 1 / (1 + math.Exp(no-yes)), true
	}
	return 0, false
}

// verifyKey is what the verifier's answer about candidate i (an index
// into s.cands) is cached under: its class, or the candidate itself with
// Config.VerifyEach.
func (s *selection) verifyKey(i int) string {
	if s.cfg.VerifyEach {
		return "#" + strconv.Itoa(i)
	}
	return s.cands[i].Class
}

// verify asks the verifier about candidate i (an index into s.cands), or
// about its class's representative unless Config.VerifyEach (cached).
func (s *selection) verify(ctx context.Context, i int) (float64, error) {
	key := s.verifyKey(i)
	s.mu.Lock()
	p, ok := s.pyes[key]
	s.mu.Unlock()
	if ok {
		return p, nil
	}
	if !s.cfg.VerifyEach {
		i = s.repIndex[key]
	}
	msgs, err := VerifierPrompt(s.in.Task.ProblemStatement, s.in.Cands[i].Patch, s.in.Cands[i].Messages)
	if err != nil {
		return 0, err
	}
	rep, err := s.cfg.Verifier.Complete(ctx, model.Request{Messages: msgs, TopLogprobs: verifierTopLPs})
	if err != nil {
		return 0, fmt.Errorf("verify candidate %d: %w", i, err)
	}
	p, found := PYes(rep.Logprobs)
	if !found {
		// No YES or NO among the tokens (or no logprobs at all): the
		// verifier said nothing for this patch.
		p = 0
	}
	s.mu.Lock()
	s.pyes[key] = p
	s.mu.Unlock()
	return p, nil
}

// bestVerifier is best-verifier's pick on a best@k result: among the
// classes tied at the best score (the execution-based filter), the one
// the verifier gives the highest P(YES); ties in P(YES) by best@k's tie
// rule. cands are s.cands[idx]; it returns an index into cands and why.
func (s *selection) bestVerifier(ctx context.Context, cands []Candidate, eligible []bool, best BestResult, idx []int) (int, string, error) {
	if best.Winner < 0 {
		return -1, "", nil
	}
	top := best.Classes[cands[best.Winner].Class].Score
	votes := Votes(cands)
	win, winP := -1, -1.0
	tied := 0
	for i, c := range cands {
		if !eligible[i] {
			continue
		}
		sc := best.Classes[c.Class]
		if sc == nil || sc.Score == nil || *sc.Score != *top {
			continue
		}
		tied++
		p, err := s.verify(ctx, idx[i])
		if err != nil {
			return -1, "", err
		}
		if win < 0 || p > winP || p == winP && before(cands, votes, i, win) {
			win, winP = i, p
		}
	}
	return win, fmt.Sprintf("%d tests passed (with %d candidates tied there); the verifier's P(YES) %.3f is the highest", *top, tied, winP), nil
}
