package trajectory

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/golden"
	"cwm/internal/model"
)

// sample is a short graded episode with every kind of field set.
func sample() *Trajectory {
	code, patch, reward, resolved, sim := 0, "diff --git a/calc.py b/calc.py\n", 1.0, true, 0.75
	return &Trajectory{
		TaskID: "calc-1", Sample: 2, Model: "m", Protocol: "cwm", EnvID: "e1",
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "sys"}, {Role: model.RoleUser, Content: "fix add"},
			{Role: model.RoleAssistant, Content: "<tool: bash>\nls\n</tool>"}, {Role: model.RoleTool, Content: "<output>\ncalc.py\n</output>"},
		},
		Steps: []Step{{Turn: 1, Tool: "bash", Action: "ls", Observation: "calc.py", OK: true, ExitCode: &code, ModelSeconds: 0.5, Seconds: 0.01}},
		ModelCalls: []ModelCall{{Turn: 1, PromptTokens: 100, CompletionTokens: 10, Cost: 0.001, FinishReason: "stop",
			Seconds: 0.5, Reasoning: "look first"}},
		ExitReason: ExitSubmitted, Patch: patch, SubmittedPatch: &patch, Turns: 1,
		Tokens: Tokens{Prompt: 100, Completion: 10, Context: 110}, Cost: 0.001,
		Retries: model.Retries{RateLimited: 1}, Seconds: 2, SetupSeconds: 1, ModelSeconds: 0.5,
		StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Reward:    &reward, Resolved: &resolved, Similarity: &sim,
	}
}

// A trajectory line is the format forage writes and every later stage
// reads: the golden file is its reviewed form.
func TestFormat(t *testing.T) {
	b, err := json.Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "trajectory.jsonl"), string(b)+"\n")
	var back Trajectory
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sample(), &back); diff != "" {
		t.Errorf("a trajectory read back differs (-wrote +read):\n%s", diff)
	}
}

func TestLineKey(t *testing.T) {
	b, _ := json.Marshal(sample())
	if k, err := LineKey(b); err != nil || k != Key("calc-1", 2) {
		t.Errorf("LineKey(trajectory) = %q, %v; want %q", k, err, Key("calc-1", 2))
	}
	for _, line := range []string{`{"task_id": "x"}`, `{"sample": 1}`, `{"instance_id": "x", "model_patch": ""}`, `nope`} {
		if _, err := LineKey([]byte(line)); err == nil {
			t.Errorf("LineKey(%s) succeeded", line)
		}
	}
	if Key("a\x00b", 1) == Key("a", 0) || !strings.HasPrefix(Key("a", 1), "a") {
		t.Error("keys of different pairs collide")
	}
}

func TestSetGrade(t *testing.T) {
	tr := &Trajectory{}
	r := -1.0
	tr.SetGrade(Grade{Reward: &r})
	if tr.Reward == nil || *tr.Reward != -1 || tr.Resolved != nil || tr.Similarity != nil {
		t.Errorf("SetGrade(reward only) = %v %v %v", tr.Reward, tr.Resolved, tr.Similarity)
	}
}
