package selection

import (
	"context"
	"fmt"
	"strings"

	_ "embed"

	"cwm/internal/agent"
	"cwm/internal/model"
)

// Ways of writing the generated tests.
const (
	// TestgenPrompt gives the model the issue and the files the
	// candidates touch, one request per test (generate_test.md).
	TestgenPrompt = "prompt"
	// TestgenAgent is CWM's test-generation environment
	// (cwm/rl/envs/envs/swerl_testgen_tool.py): an agent with bash and
	// file tools in the unpatched repository writes test_issue.py and
	// submits it, one episode per test; its test is kept only if it holds
	// both "Issue reproduced" and "Issue resolved" and, run on the
	// unpatched tree, prints "Issue reproduced" alone. The tests are not
	// conditioned on the candidates.
	TestgenAgent = "agent"
)

// testgenInstruction is CWM's USER_TESTGEN, the test-generation
// episode's user message; testgenFeedback its SUBMISSION_FEEDBACK_PROMPT.
var (
	//go:embed prompts/testgen_agent.md
	testgenInstruction string
	testgenFeedback    = "Review the following test which is marked as a submission:\n\n<submission>\n{pred_patch}\n</submission>"
)

// agentTests runs cfg.Tests test-generation episodes, episode i sampled
// with seed i, one after another, and returns each one's submitted test
// (none: Code empty, Reply says how the episode ended).
func (s *selection) agentTests(ctx context.Context) ([]GeneratedTest, error) {
	r := &agent.Runner{Sandboxes: s.tr.sbs, Client: s.cfg.Client, Limits: s.cfg.TestgenLimits,
		Protocol:    &agent.CWMProtocol{ToolRole: model.RoleTool, SubmissionFeedback: testgenFeedback},
		Instruction: testgenInstruction, SubmitFile: true}
	tests := make([]GeneratedTest, s.cfg.Tests)
	for i := range tests {
		seed := int64(i)
		tr, err := r.Run(ctx, agent.Attempt{Task: s.in.Task, Env: s.in.Env, Sample: i, Seed: &seed})
		if err != nil {
			return nil, fmt.Errorf("test-generation episode %d: %w", i, err)
		}
		tests[i] = GeneratedTest{Index: i, Tokens: tr.Tokens.Completion}
		if tr.SubmittedPatch == nil {
			tests[i].Reply = fmt.Sprintf("the episode submitted no test (it ended: %s after %d turns)", tr.ExitReason, tr.Turns)
			continue
		}
		tests[i].Code = *tr.SubmittedPatch
	}
	return tests, nil
}

// cwmTestFilter is the text check of CWM's test-generation environment
// (eval_instance): a test must hold both verdict strings; "" when it does.
func cwmTestFilter(code string) string {
	if !strings.Contains(code, "Issue reproduced") || !strings.Contains(code, "Issue resolved") {
		return "'Issue reproduced' or 'Issue resolved' not in test (CWM's filter)"
	}
	return ""
}
