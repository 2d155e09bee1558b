package agent

import (
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"cwm/internal/episode"
	"cwm/internal/episode/episodetest"
	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/trajectory"
)

// ambiguousEdit matches both add's and sub's bodies.
const ambiguousEdit = "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE"

// fixEdit is the edit that undoes the bug.
const fixEdit = "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\ndef add(a, b):\n    return a + b\n>>>>>>> REPLACE"

// wrongEdit "fixes" add the wrong way (and sub along with it).
const wrongEdit = "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\ndef add(a, b):\n    return b - a\n>>>>>>> REPLACE"

func lastMessage(tr *trajectory.Trajectory) model.Message { return tr.Messages[len(tr.Messages)-1] }

// userOrToolMessages are the messages the harness sent after the prompt.
func feedbackMessages(tr *trajectory.Trajectory) []model.Message {
	var out []model.Message
	for _, m := range tr.Messages[2:] {
		if m.Role != model.RoleAssistant {
			out = append(out, m)
		}
	}
	return out
}

// CWM-SPEC 2.2 is the authority for these episodes; each case quotes the
// rule it checks.
func TestEpisodes(t *testing.T) {
	cases := []struct {
		name    string
		replies []modeltest.Reply
		limits  Limits
		history episode.History
		check   func(t *testing.T, h *harness, tr *trajectory.Trajectory)
	}{
		{
			name: "fixes the bug and submits",
			replies: []modeltest.Reply{
				modeltest.Tool("bash", "python3 test_calc.py 2>&1 | tail -1"),
				modeltest.Tool("edit", ambiguousEdit),
				modeltest.Tool("edit", fixEdit),
				modeltest.Tool("bash", "python3 test_calc.py && git diff > /tmp/fix.patch"),
				modeltest.Tool("submit", "/tmp/fix.patch"),
				modeltest.Text("## Issue Summary\nadd subtracted.\n\n## Solution and Code Changes\nUse +."),
			},
			check: func(t *testing.T, h *harness, tr *trajectory.Trajectory) {
				if tr.ExitReason != trajectory.ExitSubmitted || tr.Turns != 6 || len(tr.Steps) != 5 {
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
				var sum trajectory.ModelCall
				for i, c := range tr.ModelCalls {
					if c.Turn != i+1 || c.FinishReason != "stop" {
						t.Errorf("model call %d = %+v", i, c)
					}
					sum.PromptTokens += c.PromptTokens
					sum.CompletionTokens += c.CompletionTokens
					sum.Cost += c.Cost
				}
				if len(tr.ModelCalls) != 6 || sum.PromptTokens != tr.Tokens.Prompt || sum.CompletionTokens != tr.Tokens.Completion || math.Abs(sum.Cost-tr.Cost) > 1e-12 {
					t.Errorf("%d model calls summing to %+v; want 6 summing to the totals %+v, $%v", len(tr.ModelCalls), sum, tr.Tokens, tr.Cost)
				}
				if tr.Reward != nil || tr.Resolved != nil {
					t.Errorf("reward fields set without a grader: %v %v", tr.Reward, tr.Resolved)
				}
			},
		},
		{
			// "`<tool: submit>\n[path to a patch file]\n</tool>`: the file must
			// start with `diff`." A wrong fix is still a submission.
			name: "submits a wrong patch",
			replies: []modeltest.Reply{
				modeltest.Tool("edit", wrongEdit),
				modeltest.Tool("bash", "git diff > wrong.patch; python3 test_calc.py 2>&1 | tail -1"),
				modeltest.Tool("submit", "wrong.patch"),
				modeltest.Text("## Done"),
			},
			check: func(t *testing.T, h *harness, tr *trajectory.Trajectory) {
				if tr.ExitReason != trajectory.ExitSubmitted {
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
			// "Limits: 128 turns, 131,072-token context, 120 s per command,
			// 2,400 s per sandbox."
			name:   "reaches max turns",
			limits: Limits{MaxTurns: 3},
			replies: []modeltest.Reply{
				modeltest.Tool("bash", "true"), modeltest.Tool("bash", "echo two"), modeltest.Tool("bash", "echo never run"),
			},
			check: func(t *testing.T, h *harness, tr *trajectory.Trajectory) {
				if tr.ExitReason != trajectory.ExitMaxTurns || tr.Turns != 3 || len(tr.Steps) != 2 {
					t.Fatalf("exit %q after %d turns, %d steps; want max_turns after 3 turns, 2 steps", tr.ExitReason, tr.Turns, len(tr.Steps))
				}
				fb := feedbackMessages(tr)
				if !strings.Contains(fb[1].Content, "* Remaining turns: 1\n") || !strings.HasPrefix(fb[1].Content, "<output>\ntwo\n</output>") {
					t.Errorf("second result = %q, want output two and 1 remaining turn", fb[1].Content)
				}
				if lastMessage(tr).Role != model.RoleAssistant {
					t.Errorf("last message %+v, want the unexecuted reply", lastMessage(tr))
				}
			},
		},
		{
			// "On timeout, session exit or output over ~480 KB the session is
			// restarted and the model is told "The current session has
			// terminated [due to timeout|unexpectedly|because your previous
			// command produced too much output]. A fresh session has started
			// with the current working directory reset to default.""
			name:   "a command hangs and the session restarts",
			limits: Limits{CommandTimeout: time.Second, MaxTurns: 4},
			replies: []modeltest.Reply{
				modeltest.Tool("bash", "cd /tmp && export X=1 && sleep 60"),
				modeltest.Tool("bash", "pwd; echo \"X=$X\""),
				modeltest.Tool("bash", "true"),
			},
			check: func(t *testing.T, h *harness, tr *trajectory.Trajectory) {
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
		{
			// "more than one call, unbalanced tags, no call, or empty
			// arguments is a format error reported back to the model."
			name:   "format errors are fed back as CWM does",
			limits: Limits{MaxFormatErrors: 4},
			replies: []modeltest.Reply{
				modeltest.Text("I will first look at the repository."),
				modeltest.Text("<tool: bash>\nls\n</tool>\n<tool: bash>\npwd\n</tool>"),
				modeltest.Text("<tool: bash>\nls"),
				modeltest.Tool("bash", "echo fine"), // resets the count
				modeltest.Tool("bash", " "),
				modeltest.Tool("python", "print(1)"),
				modeltest.Tool("submit", "/repo/missing.patch"),
				modeltest.Text("## Summary\nDone, without a successful submission."),
				modeltest.Text("<tool: bash>ls</tool>"),
				modeltest.Text("still talking"),
				modeltest.Text("and talking"),
			},
			check: func(t *testing.T, h *harness, tr *trajectory.Trajectory) {
				want := []model.Message{
					{Role: model.RoleUser, Content: "FormatError: No tool calls found"},
					{Role: model.RoleUser, Content: "FormatError: Expected one tool call, but found 2: bash, bash. Ensure only one <tool:...></tool> block is present in the response."},
					{Role: model.RoleUser, Content: "FormatError: Mismatch in tool tag counts: found 0 tool calls via regex, but counted 1 opening tags and 0 closing tags."},
					{Role: model.RoleTool, Content: "<output>\nfine\n</output>\n\n<budget>\n* Remaining turns: 124\n* Remaining tokens: "},
					{Role: model.RoleUser, Content: "FormatError: Tool 'bash' requires non-empty arguments, but received empty or whitespace-only input."},
					{Role: model.RoleUser, Content: "NoSuchToolError: Tool 'python' not found."},
					{Role: model.RoleTool, Content: "<output>\nFailed to submit /repo/missing.patch. Make sure it exists and is readable.\n</output>"},
					{Role: model.RoleUser, Content: "FormatError: No tool calls found"},
					{Role: model.RoleUser, Content: "FormatError: Mismatch in tool tag counts: found 0 tool calls via regex, but counted 1 opening tags and 1 closing tags."},
					{Role: model.RoleUser, Content: "FormatError: No tool calls found"},
				}
				got := feedbackMessages(tr)
				if len(got) != len(want) {
					t.Fatalf("%d feedback messages, want %d: %+v", len(got), len(want), got)
				}
				for i := range want {
					if got[i].Role != want[i].Role || !strings.HasPrefix(got[i].Content, want[i].Content) {
						t.Errorf("feedback %d = %+v, want %+v", i, got[i], want[i])
					}
				}
				if tr.ExitReason != trajectory.ExitFormatErrors || tr.Turns != 11 {
					t.Errorf("exit %q after %d turns, want format_errors after 11", tr.ExitReason, tr.Turns)
				}
			},
		},
		{
			name:   "strict mode ends at the first format error",
			limits: Limits{Strict: true},
			replies: []modeltest.Reply{
				modeltest.Tool("bash", "true"),
				modeltest.Text("Thinking out loud."),
			},
			check: func(t *testing.T, h *harness, tr *trajectory.Trajectory) {
				if tr.ExitReason != trajectory.ExitFormatErrors || tr.Turns != 2 || !tr.Steps[1].FormatError {
					t.Errorf("exit %q after %d turns, want format_errors after 2", tr.ExitReason, tr.Turns)
				}
			},
		},
		{
			name:   "strict mode wants a markdown summary after submitting",
			limits: Limits{Strict: true},
			replies: []modeltest.Reply{
				modeltest.Tool("bash", "git diff > /tmp/p.patch; echo 'diff --git a/x b/x' > /tmp/p.patch"),
				modeltest.Tool("submit", "/tmp/p.patch"),
				modeltest.Text("# Summary without level-two headings"),
			},
			check: func(t *testing.T, h *harness, tr *trajectory.Trajectory) {
				if tr.ExitReason != trajectory.ExitFormatErrors || tr.SubmittedPatch == nil {
					t.Errorf("exit %q (submitted %v), want format_errors after a submission", tr.ExitReason, tr.SubmittedPatch != nil)
				}
			},
		},
		{
			// "Before the episode the repository's future history is removed
			// (remotes, other refs, reflog) so the agent cannot read the fix
			// from git."
			name: "the bug's history is not visible",
			replies: []modeltest.Reply{
				modeltest.Tool("bash", "git status --short; git log --all --format='%H %an <%ae> %ad | %cn <%ce> %cd | %s' --date=iso-strict"),
				modeltest.Tool("bash", "git log -p --all | cat; git show | cat; git diff HEAD; git reflog --all; git stash list"),
				modeltest.Tool("bash", "git branch -a; git tag; git remote -v; git for-each-ref; ls $(git rev-parse --git-dir) | grep -c HEAD"),
				modeltest.Tool("bash", "git cat-file --batch-all-objects --batch | grep -ac -e 'return a + b' -e SECRET; git fsck --lost-found 2>&1 | grep -c dangling"),
			},
			limits: Limits{MaxTurns: 5},
			check: func(t *testing.T, h *harness, tr *trajectory.Trajectory) {
				repo := filepath.Join(h.layer, "repo")
				orig := strings.TrimSpace(episodetest.Git(t, repo, "log", "-1", "--format=%an <%ae> %ad | %cn <%ce> %cd | %s", "--date=iso-strict"))
				s := tr.Steps
				lines := strings.Split(s[0].Observation, "\n")
				if len(lines) != 1 || !strings.HasSuffix(lines[0], orig) {
					t.Errorf("status and log = %q, want one commit with the original metadata %q and a clean tree", s[0].Observation, orig)
				}
				for _, leak := range []string{"return a + b", "SECRET"} {
					if strings.Contains(s[1].Observation, leak) {
						t.Errorf("history shows %q:\n%s", leak, s[1].Observation)
					}
				}
				if !strings.Contains(s[1].Observation, "+    return a - b") {
					t.Errorf("git show does not show the buggy line as part of the base commit:\n%s", s[1].Observation)
				}
				t.Logf("history as the agent sees it:\n%s\n%s\n%s", s[0].Observation, s[1].Observation, s[2].Observation)
				if got := s[2].Observation; !regexp.MustCompile(`^\* main\n[0-9a-f]{40} commit\trefs/heads/main\n1$`).MatchString(got) {
					t.Errorf("refs = %q, want branch main alone (no tag, remote or other branch) and HEAD alone in the git dir", got)
				}
				if got := s[3].Observation; got != "0\n0" {
					t.Errorf("objects holding the fix or the future commit, dangling objects = %q, want 0 and 0", got)
				}
			},
		},
		{
			name:    "the wall time runs out",
			limits:  Limits{WallTime: 3 * time.Second},
			replies: []modeltest.Reply{modeltest.Tool("bash", "sleep 30")},
			check: func(t *testing.T, h *harness, tr *trajectory.Trajectory) {
				if tr.ExitReason != trajectory.ExitTimeout || tr.Seconds > 20 {
					t.Errorf("exit %q after %.1fs, want timeout after ~3s", tr.ExitReason, tr.Seconds)
				}
			},
		},
		{
			name:   "the cost limit is reached",
			limits: Limits{MaxCost: 0.001}, // the harness prices tokens at $1 and $2 per million
			replies: []modeltest.Reply{
				{Content: "<tool: bash>\ntrue\n</tool>", Usage: &modeltest.Usage{PromptTokens: 400, CompletionTokens: 10}},
				{Content: "<tool: bash>\ntrue\n</tool>", Usage: &modeltest.Usage{PromptTokens: 600, CompletionTokens: 10}},
			},
			check: func(t *testing.T, h *harness, tr *trajectory.Trajectory) {
				if tr.ExitReason != trajectory.ExitCost || tr.Turns != 2 || tr.Cost < 0.001 {
					t.Errorf("exit %q after %d turns at $%v, want cost after 2 turns", tr.ExitReason, tr.Turns, tr.Cost)
				}
			},
		},
		{
			name:   "the context window fills",
			limits: Limits{ContextTokens: 20000},
			replies: []modeltest.Reply{
				{Content: "<tool: bash>\ntrue\n</tool>", Usage: &modeltest.Usage{PromptTokens: 15000, CompletionTokens: 10}},
				{Content: "<tool: bash>\nseq 1 30000\n</tool>", Usage: &modeltest.Usage{PromptTokens: 15100, CompletionTokens: 10}},
				modeltest.Tool("bash", "never asked"),
			},
			check: func(t *testing.T, h *harness, tr *trajectory.Trajectory) {
				// 30,000 lines of output (~170 KB, ~43k tokens) cannot fit:
				// the episode ends before a prompt the server would refuse.
				if tr.ExitReason != trajectory.ExitContext || tr.Turns != 2 || len(h.server.Requests()) != 2 {
					t.Errorf("exit %q after %d turns and %d requests, want context after 2", tr.ExitReason, tr.Turns, len(h.server.Requests()))
				}
				if !strings.Contains(tr.Messages[3].Content, "* Remaining tokens: 4") {
					t.Errorf("first result = %q, want about 5k tokens remaining", tr.Messages[3].Content)
				}
			},
		},
		{
			name: "the server refuses a prompt longer than its context",
			replies: []modeltest.Reply{
				modeltest.Tool("bash", "true"),
				{Status: 400, Error: "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens."},
			},
			check: func(t *testing.T, h *harness, tr *trajectory.Trajectory) {
				if tr.ExitReason != trajectory.ExitContext || tr.Turns != 1 {
					t.Errorf("exit %q after %d turns, want context after 1", tr.ExitReason, tr.Turns)
				}
			},
		},
		{
			name:   "the session exits or floods its output",
			limits: Limits{MaxTurns: 4},
			replies: []modeltest.Reply{
				modeltest.Tool("bash", "cd /tmp; exit 3"),
				modeltest.Tool("bash", "pwd; head -c 2000000 /dev/zero | tr '\\0' x"),
				modeltest.Tool("bash", "pwd"),
			},
			check: func(t *testing.T, h *harness, tr *trajectory.Trajectory) {
				want := []string{
					"The current session has terminated unexpectedly. A fresh session has started with the current working directory reset to default.",
					"The current session has terminated because your previous command produced too much output. A fresh session has started with the current working directory reset to default.",
					"/repo",
				}
				for i, w := range want {
					if tr.Steps[i].Observation != w {
						t.Errorf("step %d observed %.200q, want %q", i, tr.Steps[i].Observation, w)
					}
				}
			},
		},
		{
			// "`<tool: create>\n[path]\n[content]\n</tool>`: path must not
			// exist, its parent must."
			name:   "file tools resolve paths in the session's directory",
			limits: Limits{MaxTurns: 11},
			replies: []modeltest.Reply{
				modeltest.Tool("create", "calc.py\nx = 1"),
				modeltest.Tool("create", "/nope/x.py\nx = 1"),
				modeltest.Tool("bash", "mkdir -p /tmp/work && cd /tmp/work && : > empty.patch && echo hello > not.patch"),
				modeltest.Tool("create", "notes.txt\nfirst\nsecond"),
				modeltest.Tool("edit", "notes.txt\n<<<<<<< SEARCH\nsecond\n=======\n2nd\n>>>>>>> REPLACE"),
				modeltest.Tool("bash", "cat /tmp/work/notes.txt"),
				modeltest.Tool("submit", "empty.patch"),
				modeltest.Tool("submit", "not.patch"),
				modeltest.Tool("edit", "missing.py\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE"),
				modeltest.Tool("edit", "just some text"),
			},
			check: func(t *testing.T, h *harness, tr *trajectory.Trajectory) {
				want := []string{
					"calc.py already exists. Cannot create a new file at an existing path.",
					"File creation failed. The parent directory /nope does not exist.",
					"",
					"File created successfully at: notes.txt (2 lines).",
					"File notes.txt has been successfully updated at line 2 and now contains 2 lines.",
					"first\n2nd",
					"Failed to submit empty.patch. It is an empty file.",
					"Failed to submit not.patch. It is not a valid diff file.",
					"The path missing.py does not exist. Please provide a valid path.",
					episode.EditParseError,
				}
				for i, w := range want {
					if !strings.HasPrefix(tr.Steps[i].Observation, w) {
						t.Errorf("step %d (%s) observed %q, want %q", i, tr.Steps[i].Tool, tr.Steps[i].Observation, w)
					}
				}
				if tr.SubmittedPatch != nil || tr.Patch != "" {
					t.Errorf("submitted %v, patch %q: want nothing submitted and the repository untouched", tr.SubmittedPatch, tr.Patch)
				}
			},
		},
		{
			// Amending keeps the ancestors, and with them the fix: HEAD's
			// parent has the right code, so HEAD's change shows the bug.
			name:    "amend keeps the ancestors",
			history: episode.HistoryAmend,
			limits:  Limits{MaxTurns: 2},
			replies: []modeltest.Reply{modeltest.Tool("bash", "git log --format=%s | cat; git show HEAD -- calc.py | grep '^[-+] '")},
			check: func(t *testing.T, h *harness, tr *trajectory.Trajectory) {
				if got, want := tr.Steps[0].Observation, "Add tests\nAdd calc\n-    return a + b\n+    return a - b"; got != want {
					t.Errorf("history with amend = %q, want %q", got, want)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			script := modeltest.ByIssue(map[string][]modeltest.Reply{"calc-1": c.replies}, modeltest.Text("no more replies"))
			h := newHarness(t, script, "cwm", c.limits)
			h.runner.History = c.history
			tr := h.run(t)
			c.check(t, h, tr)
		})
	}
}

// A model server that dies mid-episode ends the episode with model_error
// and a record of what happened before.
func TestModelServerDies(t *testing.T) {
	var h *harness
	script := func(r *modeltest.Request) modeltest.Reply {
		if r.Turn() == 0 {
			return modeltest.Tool("bash", "echo alive")
		}
		go h.server.Close()
		return modeltest.Reply{Hangup: true}
	}
	h = newHarness(t, script, "cwm", Limits{})
	tr := h.run(t)
	if tr.ExitReason != trajectory.ExitModelError || tr.Turns != 1 || tr.Retries.Network != 3 || !strings.Contains(tr.Error, "after 4 attempts") {
		t.Errorf("exit %q after %d turns, retries %+v, error %q; want model_error after 1 turn and 3 network retries",
			tr.ExitReason, tr.Turns, tr.Retries, tr.Error)
	}
	if len(tr.Steps) != 1 || tr.Steps[0].Observation != "alive" {
		t.Errorf("steps = %+v, want the one step before the server died", tr.Steps)
	}
}

// TestReasoningKept checks that the thinking a reasoning model's server
// returns beside the message (vLLM's reasoning_content) is recorded with
// its model call and not sent back to the model on later turns.
func TestReasoningKept(t *testing.T) {
	script := func(r *modeltest.Request) modeltest.Reply {
		if r.Turn() == 0 {
			rep := modeltest.Tool("bash", "echo thinking-done")
			rep.Reasoning = "First look around the repository."
			return rep
		}
		return modeltest.Tool("submit", "/nonexistent.patch")
	}
	h := newHarness(t, script, "cwm", Limits{MaxTurns: 2})
	tr := h.run(t)
	if len(tr.ModelCalls) != 2 || tr.ModelCalls[0].Reasoning != "First look around the repository." || tr.ModelCalls[1].Reasoning != "" {
		t.Fatalf("model calls = %+v, want the first reply's reasoning on the first call only", tr.ModelCalls)
	}
	reqs := h.server.Requests()
	if len(reqs) != 2 || strings.Contains(string(reqs[1].Body), "reasoning") || strings.Contains(string(reqs[1].Body), "First look around") {
		t.Errorf("the second request sent the reasoning back: %s", reqs[len(reqs)-1].Body)
	}
	for _, m := range tr.Messages {
		if strings.Contains(m.Content, "First look around") {
			t.Errorf("reasoning leaked into message %+v", m)
		}
	}
}

func TestFunctionCallingEpisode(t *testing.T) {
	calls := func(name, args string) modeltest.Reply {
		return modeltest.Reply{ToolCalls: []modeltest.ToolCall{modeltest.Call("call_"+name, name, args)}}
	}
	replies := []modeltest.Reply{
		calls("view", `{"path": "calc.py", "start": 1, "end": 2}`),
		calls("edit", `{"path": "calc.py", "search": "def add(a, b):\n    return a - b", "replace": "def add(a, b):\n    return a + b"}`),
		calls("create", `{"path": "test_more.py", "content": "from calc import add\nassert add(1, 1) == 2\n"}`),
		calls("bash", `{"command": "python3 test_more.py && git diff > /tmp/fix.patch && echo ok"}`),
		calls("grep", `{"pattern": "x"}`),
		calls("bash", `{"command": `),
		calls("submit", `{"path": "/tmp/fix.patch"}`),
		modeltest.Text("The fix is submitted."),
	}
	h := newHarness(t, modeltest.ByIssue(map[string][]modeltest.Reply{"calc-1": replies}, modeltest.Text("?")), "openai", Limits{})
	tr := h.run(t)
	if tr.ExitReason != trajectory.ExitSubmitted || tr.Turns != 8 || tr.Protocol != "openai" {
		t.Fatalf("exit %q after %d turns, want submitted after 8", tr.ExitReason, tr.Turns)
	}
	wantObs := []string{
		"     1\tdef add(a, b):\n     2\t    return a - b",
		"File calc.py has been successfully updated at line 1",
		"File created successfully at: test_more.py (3 lines).",
		"ok",
		"NoSuchToolError: Tool 'grep' not found.",
		"FormatError: The arguments of tool 'bash' are not valid JSON",
		"diff --git a/calc.py b/calc.py",
	}
	for i, w := range wantObs {
		if !strings.HasPrefix(tr.Steps[i].Observation, w) {
			t.Errorf("step %d (%s) observed %q, want it to start with %q", i, tr.Steps[i].Tool, tr.Steps[i].Observation, w)
		}
	}
	if !tr.Steps[4].FormatError || !tr.Steps[5].FormatError {
		t.Errorf("unknown tool and bad JSON are not counted as format errors")
	}
	for _, m := range tr.Messages {
		if m.Role == model.RoleTool && !strings.HasPrefix(m.ToolCallID, "call_") {
			t.Errorf("tool message without its call's id: %+v", m)
		}
	}
	reqs := h.server.Requests()
	if len(reqs[0].Tools) != 5 {
		t.Errorf("first request offers %d tools, want 5", len(reqs[0].Tools))
	}
	if !strings.Contains(tr.Patch, "+    return a + b") || !strings.Contains(tr.Patch, "b/test_more.py") {
		t.Errorf("patch = %q, want the fix and the new test", tr.Patch)
	}
}
