package tasks

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"cwm/internal/model"
	"cwm/internal/task"
	"cwm/internal/testrun"
)

// classifySystem asks a model for the fix classifier's verdict. Unlike a
// problem statement, the verdict may see the fix: it is not shown to
// anyone solving the task.
const classifySystem = `You decide whether a commit of a Python repository fixes a bug, or instead adds a feature, refactors, or changes documentation or packaging. You are given the commit message, the tests the commit makes pass that failed before it with their failure messages, and the commit's change to the source (not the tests).
Answer with one line that is exactly FIX or NOT A FIX, then one short sentence saying why.`

// maxClassifyDiff bounds the source diff shown to the classifier model.
const maxClassifyDiff = 8000

// modelAnswer is a classifier model's answer: a fix or not, and why.
type modelAnswer struct {
	fix bool
	why string
}

// modelVerdict asks m whether the commit is a fix. Without an answer (the
// model failed, or its reply had no verdict) it returns nil and a note
// saying what happened.
func modelVerdict(ctx context.Context, m Completer, message, fix string, f2p []string, failures map[string]testrun.Test) (*modelAnswer, string) {
	var b strings.Builder
	b.WriteString("The commit message:\n\n" + strings.TrimSpace(message) + "\n\n")
	b.WriteString(failingTests(f2p, failures))
	b.WriteString("\nThe change to the source:\n\n```diff\n" + clip(fix, maxClassifyDiff) + "\n```\n")
	rep, err := m.Complete(ctx, model.Request{Messages: []model.Message{
		{Role: model.RoleSystem, Content: classifySystem}, {Role: model.RoleUser, Content: b.String()}}})
	if err != nil {
		return nil, fmt.Sprintf("model classification failed: %v", err)
	}
	switch v, why := parseVerdict(rep.Message.Content); v {
	case "FIX":
		return &modelAnswer{true, why}, ""
	case "NOT A FIX":
		return &modelAnswer{false, why}, ""
	}
	return nil, fmt.Sprintf("model classification ignored: no FIX or NOT A FIX in its reply %q", clip(strings.TrimSpace(rep.Message.Content), 80))
}

// parseVerdict reads a classifier reply: the verdict on its first
// non-empty line (any case, markup such as ** or ` dropped) and the rest,
// one line, as the reason.
func parseVerdict(reply string) (verdict, why string) {
	lines := strings.Split(strings.TrimSpace(reply), "\n")
	first := strings.TrimSpace(strings.Map(func(r rune) rune {
		if strings.ContainsRune("*`#_", r) {
			return -1
		}
		return r
	}, lines[0]))
	up := strings.ToUpper(first)
	for _, v := range []string{"NOT A FIX", "FIX"} {
		if !strings.HasPrefix(up, v) || len(up) > len(v) && unicode.IsLetter(rune(up[len(v)])) {
			continue
		}
		why = strings.TrimLeft(first[len(v):], ".:!,-\"' ") + " " + strings.Join(lines[1:], " ")
		return v, clip(strings.Join(strings.Fields(why), " "), 200)
	}
	return "", ""
}

// applyModelVerdict makes the model's verdict v the classifier's: the
// rules' score and reasons stay as evidence, and a reason says what the
// model answered. Without a verdict (v nil) the rules decide and note
// says why.
func applyModelVerdict(c *task.FixClass, name string, v *modelAnswer, note string) {
	if v == nil {
		c.Reasons = append(c.Reasons, note+": the rules decide")
		return
	}
	what := "not a fix"
	if v.fix {
		what = "a fix"
	}
	c.Model, c.Fix = name, v.fix
	r := fmt.Sprintf("model %s: %s", name, what)
	if v.why != "" {
		r += " (" + v.why + ")"
	}
	c.Reasons = append(c.Reasons, r)
}
