package tasks

import (
	"context"
	"fmt"
	"strings"

	"cwm/internal/model"
	"cwm/internal/testrun"
)

// Completer is the model a problem statement is asked of (*model.Client
// is one).
type Completer interface {
	Complete(ctx context.Context, req model.Request) (model.Reply, error)
}

// statementTries is how many statements a model may write before the
// commit message is kept instead.
const statementTries = 3

// minQuoted is the shortest line of a fix (trimmed) that counts as quoted
// when a statement contains it; shorter ones ("return x") are too common.
const minQuoted = 12

const statementSystem = `You write GitHub issues for a Python repository. You are shown tests that fail and how they fail. Write the issue a user would file: what they did, what they expected, what happened instead, with a minimal example. Describe the behaviour only: do not say how to fix it, do not name the fix, do not write the corrected code. Reply with the issue text alone.`

// modelStatement asks m for a problem statement written from the failing
// tests (their ids, their failure messages on the buggy tree, the test
// code the commit adds), never from the fix. A statement that quotes a
// line of fix is rejected and asked again, up to statementTries times;
// notes say what happened to each try. It returns "" when no statement
// was accepted, and the commit message stays.
func modelStatement(ctx context.Context, m Completer, f2p []string, got map[string]testrun.Test, testPatch, fix string) (string, []string) {
	var b strings.Builder
	b.WriteString(failingTests(f2p, got))
	b.WriteString("\nThe tests:\n\n```\n")
	for _, line := range strings.Split(testPatch, "\n") {
		if strings.HasPrefix(line, "+") && !strings.HasPrefix(line, "+++") {
			b.WriteString(line[1:] + "\n")
		}
	}
	b.WriteString("```\n")
	msgs := []model.Message{{Role: model.RoleSystem, Content: statementSystem}, {Role: model.RoleUser, Content: clip(b.String(), 12000)}}
	var notes []string
	for try := 1; try <= statementTries; try++ {
		rep, err := m.Complete(ctx, model.Request{Messages: msgs})
		if err != nil {
			notes = append(notes, fmt.Sprintf("model statement %d: %v", try, err))
			return "", notes
		}
		text := strings.TrimSpace(rep.Message.Content)
		quoted := quotedLine(text, fix)
		switch {
		case text == "":
			notes = append(notes, fmt.Sprintf("model statement %d rejected: empty", try))
		case quoted != "":
			notes = append(notes, fmt.Sprintf("model statement %d rejected: it quotes the fix (%q)", try, clip(quoted, 80)))
		default:
			notes = append(notes, fmt.Sprintf("model statement %d accepted: it quotes no line of the fix", try))
			return text, notes
		}
		msgs = append(msgs, model.Message{Role: model.RoleAssistant, Content: rep.Message.Content},
			model.Message{Role: model.RoleUser, Content: "That issue gives the fix away or is empty. Write it again describing only the behaviour, with no code from the fix."})
	}
	return "", notes
}

// failingTests lists the FAIL_TO_PASS tests with their failure messages
// on the buggy tree (scrubbed of source paths and line numbers).
func failingTests(f2p []string, got map[string]testrun.Test) string {
	var b strings.Builder
	b.WriteString("These tests fail:\n\n")
	for i, id := range f2p {
		if i == maxListed {
			fmt.Fprintf(&b, "- ... and %d more\n", len(f2p)-maxListed)
			break
		}
		msg := scrub(got[id].Message)
		if msg == "" {
			msg = string(got[id].Outcome)
		}
		fmt.Fprintf(&b, "- %s\n  %s\n", id, clip(msg, 400))
	}
	return b.String()
}

// quotedLine is the first changed line of patch (at least minQuoted
// characters once trimmed) that text contains, or "".
func quotedLine(text, patch string) string {
	for _, line := range strings.Split(patch, "\n") {
		if strings.HasPrefix(line, "+++") || strings.HasPrefix(line, "---") ||
			!(strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-")) {
			continue
		}
		if l := strings.TrimSpace(line[1:]); len(l) >= minQuoted && strings.Contains(text, l) {
			return l
		}
	}
	return ""
}
