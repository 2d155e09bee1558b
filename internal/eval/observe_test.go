package eval

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/trajectory"
)

func observeTrajectory() *trajectory.Trajectory {
	msgs := []model.Message{
		{Role: "system", Content: "You are a helpful assistant."},
		{Role: "user", Content: "Fix the bug in textkit."},
		{Role: "assistant", Content: "<tool: bash>\nls\n</tool>"},
		{Role: "tool", Content: "<output>\nREADME.md\ntextkit\n</output>"},
		{Role: "assistant", Content: "Let me look."},
		{Role: "user", Content: "Format error: no tool call."},
		{Role: "assistant", Content: "<tool: bash>\npytest -q\n</tool>"},
		{Role: "tool", Content: "<output>\n3 passed in 0.52s\n</output>"},
		{Role: "assistant", Content: "<tool: submit>\n/tmp/p.diff\n</tool>"},
	}
	return &trajectory.Trajectory{TaskID: "textkit-1", Sample: 2, Messages: msgs, Steps: []trajectory.Step{
		{Turn: 1, Tool: "bash"}, {Turn: 2, FormatError: true}, {Turn: 3, Tool: "bash"}, {Turn: 4, Tool: "submit"}}}
}

func TestObservations(t *testing.T) {
	obs := Observations(observeTrajectory())
	if len(obs) != 2 || obs[0].Message != 2 || obs[1].Message != 6 || obs[1].Tool != "bash" ||
		obs[1].Truth != "<output>\n3 passed in 0.52s\n</output>" || len(obs[1].History) != 7 || obs[0].ID != "textkit-1#2" {
		t.Fatalf("observations %+v", obs)
	}
	pr := BuildObservePrompt(Completions, &obs[1])
	if !strings.HasPrefix(pr.Text, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>") ||
		!strings.Contains(pr.Text, "<|start_header_id|>tool: bash<|end_header_id|>\n\n<output>\nREADME.md") ||
		!strings.HasSuffix(pr.Text, "pytest -q\n</tool><|eot_id|><|start_header_id|>tool: bash<|end_header_id|>\n\n") || pr.Stop[0] != "<|eot_id|>" {
		t.Errorf("completions prompt:\n%q", pr.Text)
	}
	ch := BuildObservePrompt(Chat, &obs[1])
	last := ch.Messages[len(ch.Messages)-1]
	if last.Role != "user" || !strings.Contains(last.Content, "the bash tool") || ch.Messages[len(ch.Messages)-2].Role != "assistant" {
		t.Errorf("chat prompt: %+v", ch.Messages)
	}
	for i := 1; i < len(ch.Messages); i++ {
		if ch.Messages[i].Role == ch.Messages[i-1].Role {
			t.Errorf("chat prompt repeats role %s at %d", ch.Messages[i].Role, i)
		}
	}
}

func TestNormalize(t *testing.T) {
	cases := []struct{ a, b string }{
		{"3 passed in 0.52s\n", "3 passed in 1.07s"},
		{"written to /tmp/tmpab12_x/out.txt", "written to /tmp/tmpzz99/out.txt"},
		{"<Foo object at 0x7f3a2b1c9d00>", "<Foo object at 0x7f00000000aa>"},
		{"HEAD is now at 3f2a9c1 fix", "HEAD is now at 9b8e7d6 fix"},
		{"2025-11-02 10:31:07 started", "2026-01-30T08:00:00Z started"},
		{"pid 4242 exited  \n", "pid 17 exited"},
	}
	for _, c := range cases {
		if Normalize(c.a) != Normalize(c.b) {
			t.Errorf("%q and %q normalise to %q and %q", c.a, c.b, Normalize(c.a), Normalize(c.b))
		}
	}
	for _, c := range []struct{ a, b string }{{"3 passed", "4 passed"}, {"value 1234567", "value 1234568"}, {"deadbeef", "cafebabe"}} {
		if Normalize(c.a) == Normalize(c.b) {
			t.Errorf("%q and %q normalise alike", c.a, c.b)
		}
	}
}

// TestRunObserve predicts the two observations of a trajectory: one
// exactly, one right but for its timing.
func TestRunObserve(t *testing.T) {
	obs := Observations(observeTrajectory())
	replies := map[string]string{
		BuildObservePrompt(Completions, &obs[0]).Text: "<output>\nREADME.md\ntextkit\n</output>",
		BuildObservePrompt(Completions, &obs[1]).Text: "<output>\n3 passed in 0.61s\n</output>",
	}
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply { return modeltest.Text(replies[r.Prompt]) }, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "obs.jsonl")
	sum, err := RunObserve(context.Background(), ObserveOptions{Observations: obs, API: Completions, Client: testClient(t, srv.URL), Out: out, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	b := sum.Tools["bash"]
	if sum.All.N != 2 || sum.All.Exact != 0.5 || sum.All.Normalized != 1 || b.N != 2 || sum.All.Similarity != 1 {
		t.Fatalf("summary %+v", sum)
	}
	if _, _, sim := ScoreObservation("abcd", "abce"); sim != 0.75 {
		t.Errorf("similarity of abcd and abce = %v, want difflib's 0.75", sim)
	}
}
