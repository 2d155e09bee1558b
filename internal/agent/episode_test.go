package agent

import (
	"strings"
	"testing"
	"time"

	"cwm/internal/agent/agenttest"
)

// ambiguousEdit matches both add's and sub's bodies.
const ambiguousEdit = "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE"

// fixEdit is the edit that undoes the bug.
const fixEdit = "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\ndef add(a, b):\n    return a + b\n>>>>>>> REPLACE"

// wrongEdit "fixes" add the wrong way (and sub along with it).
const wrongEdit = "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\ndef add(a, b):\n    return b - a\n>>>>>>> REPLACE"

func lastMessage(tr *Trajectory) Message { return tr.Messages[len(tr.Messages)-1] }

// userOrToolMessages are the messages the harness sent after the prompt.
func feedbackMessages(tr *Trajectory) []Message {
	var out []Message
	for _, m := range tr.Messages[2:] {
		if m.Role != RoleAssistant {
			out = append(out, m)
		}
	}
	return out
}

func TestEpisodes(t *testing.T) {
	cases := []struct {
		name    string
		replies []agenttest.Reply
		limits  Limits
		check   func(t *testing.T, h *harness, tr *Trajectory)
	}{
		{
			name: "fixes the bug and submits",
			replies: []agenttest.Reply{
				agenttest.Tool("bash", "python3 test_calc.py 2>&1 | tail -1"),
				agenttest.Tool("edit", ambiguousEdit),
				agenttest.Tool("edit", fixEdit),
				agenttest.Tool("bash", "python3 test_calc.py && git diff > /tmp/fix.patch"),
				agenttest.Tool("submit", "/tmp/fix.patch"),
				agenttest.Text("## Issue Summary\nadd subtracted.\n\n## Solution and Code Changes\nUse +."),
			},
			check: func(t *testing.T, h *harness, tr *Trajectory) {
				if tr.ExitReason != ExitSubmitted || tr.Turns != 6 || len(tr.Steps) != 5 {
					t.Fatalf("exit %q after %d turns, %d steps; want submitted after 6 turns, 5 steps", tr.ExitReason, tr.Turns, len(tr.Steps))
				}
				wantAmbiguous := "No replacement was performed. Multiple occurrences of the search text in lines [2, 6] of calc.py. Please ensure it is unique."
				if got := tr.Steps[1].Observation; got != wantAmbiguous {
					t.Errorf("ambiguous edit: %q, want %q", got, wantAmbiguous)
				}
				wantEdit := "File calc.py has been successfully updated at line 1 and now contains 7 lines. The surrounding lines after the edit are shown below:\n" +
					"     1\tdef add(a, b):\n     2\t    return a + b\n     3\t\n     4\t\n     5\tdef sub(a, b):\n     6\t    return a - b\n     7\t\n" +
					"Review the changes and make sure they are as expected."
				if got := tr.Steps[2].Observation; got != wantEdit {
					t.Errorf("edit: %q, want %q", got, wantEdit)
				}
				if got := tr.Steps[0].Observation; got != "FAILED (failures=1)" {
					t.Errorf("tests before the fix: %q, want FAILED (failures=1)", got)
				}
				if s := tr.Steps[3]; *s.ExitCode != 0 {
					t.Errorf("tests after the fix exit %d: %q", *s.ExitCode, s.Observation)
				}
				if tr.Patch != h.task.Patch {
					t.Errorf("patch =\n%s\nwant the gold patch\n%s", tr.Patch, h.task.Patch)
				}
				if tr.SubmittedPatch == nil || *tr.SubmittedPatch != h.task.Patch {
					t.Errorf("submitted patch = %v, want the gold patch", tr.SubmittedPatch)
				}
				if tr.Tokens.Prompt == 0 || tr.Tokens.Completion == 0 || tr.Cost == 0 {
					t.Errorf("tokens %+v, cost %v: want usage and cost counted", tr.Tokens, tr.Cost)
				}
				if tr.Reward != nil || tr.Resolved != nil {
					t.Errorf("reward fields set without a grader: %v %v", tr.Reward, tr.Resolved)
				}
			},
		},
		{
			name: "submits a wrong patch",
			replies: []agenttest.Reply{
				agenttest.Tool("edit", wrongEdit),
				agenttest.Tool("bash", "git diff > wrong.patch; python3 test_calc.py 2>&1 | tail -1"),
				agenttest.Tool("submit", "wrong.patch"),
				agenttest.Text("## Done"),
			},
			check: func(t *testing.T, h *harness, tr *Trajectory) {
				if tr.ExitReason != ExitSubmitted {
					t.Fatalf("exit %q, want submitted", tr.ExitReason)
				}
				if got := tr.Steps[1].Observation; got != "FAILED (failures=1)" {
					t.Errorf("tests after the wrong fix: %q", got)
				}
				if tr.SubmittedPatch == nil || !strings.Contains(*tr.SubmittedPatch, "+    return b - a") {
					t.Errorf("submitted patch = %v, want the wrong edit", tr.SubmittedPatch)
				}
				// The final diff has the patch file too: it is what the
				// repository holds, whatever was submitted.
				if !strings.Contains(tr.Patch, "+    return b - a") || !strings.Contains(tr.Patch, "b/wrong.patch") {
					t.Errorf("patch = %q, want the wrong edit and the new patch file", tr.Patch)
				}
			},
		},
		{
			name:   "reaches max turns",
			limits: Limits{MaxTurns: 3},
			replies: []agenttest.Reply{
				agenttest.Tool("bash", "true"), agenttest.Tool("bash", "echo two"), agenttest.Tool("bash", "echo never run"),
			},
			check: func(t *testing.T, h *harness, tr *Trajectory) {
				if tr.ExitReason != ExitMaxTurns || tr.Turns != 3 || len(tr.Steps) != 2 {
					t.Fatalf("exit %q after %d turns, %d steps; want max_turns after 3 turns, 2 steps", tr.ExitReason, tr.Turns, len(tr.Steps))
				}
				fb := feedbackMessages(tr)
				if !strings.Contains(fb[1].Content, "* Remaining turns: 1\n") || !strings.HasPrefix(fb[1].Content, "<output>\ntwo\n</output>") {
					t.Errorf("second result = %q, want output two and 1 remaining turn", fb[1].Content)
				}
				if lastMessage(tr).Role != RoleAssistant {
					t.Errorf("last message %+v, want the unexecuted reply", lastMessage(tr))
				}
			},
		},
		{
			name:   "a command hangs and the session restarts",
			limits: Limits{CommandTimeout: time.Second, MaxTurns: 4},
			replies: []agenttest.Reply{
				agenttest.Tool("bash", "cd /tmp && export X=1 && sleep 60"),
				agenttest.Tool("bash", "pwd; echo \"X=$X\""),
				agenttest.Tool("bash", "true"),
			},
			check: func(t *testing.T, h *harness, tr *Trajectory) {
				s := tr.Steps[0]
				want := "The current session has terminated due to timeout. A fresh session has started with the current working directory reset to default."
				if s.Observation != want || *s.ExitCode != -1 || s.Seconds < 1 || s.Seconds > 10 {
					t.Errorf("hung step = %+v, want CWM's timeout message after ~1s", s)
				}
				if got := tr.Steps[1].Observation; got != "/repo\nX=" {
					t.Errorf("after restart: %q, want a fresh session in /repo", got)
				}
				if !strings.Contains(tr.Messages[0].Content, "after a 1-second session timeout") {
					t.Errorf("system prompt does not state the 1-second timeout")
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			script := agenttest.ByIssue(map[string][]agenttest.Reply{"calc-1": c.replies}, agenttest.Text("no more replies"))
			h := newHarness(t, script, "cwm", c.limits)
			tr := h.run(t)
			c.check(t, h, tr)
		})
	}
}
