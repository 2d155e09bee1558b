package reward

import (
	"context"
	"fmt"
	"strings"

	"cwm/internal/env"
	"cwm/internal/model"
	"cwm/internal/sandbox"
	"cwm/internal/task"
)

// ApplyBug applies t's bug patch (if any) in s, a fresh sandbox on e,
// making the task's unpatched tree: the tree a candidate patch is written
// against, without the test patch (which holds hidden tests). A bug patch
// that does not apply is an error wrapping ErrTask.
func ApplyBug(ctx context.Context, s *sandbox.Sandbox, e *env.Env, t *task.Task) error {
	if t.BugPatch == "" {
		return nil
	}
	res, err := s.Exec(ctx, sandbox.Cmd{Args: []string{"git", "apply", "--whitespace=nowarn", "-"}, Stdin: strings.NewReader(t.BugPatch)})
	if err != nil {
		return fmt.Errorf("apply the bug patch of %s: %w", t.InstanceID, err)
	}
	if !res.Success() {
		return fmt.Errorf("%s: %w: its bug_patch does not apply to environment %s: %s", t.InstanceID, ErrTask, e.ID, firstLines(res.Stderr, 3))
	}
	return nil
}

// ApplyCandidate applies a non-empty candidate patch in s as Grade does:
// git apply, else patch --fuzz; it returns how, and what the tools said
// when the patch did not apply cleanly.
func ApplyCandidate(ctx context.Context, s *sandbox.Sandbox, patch string) (ApplyMethod, string, error) {
	return applyCandidate(ctx, s, patch)
}

// CandidateLine is what a line of predictions or trajectories says about
// one candidate patch, for the stages that read the same inputs as cwm
// reward (cwm select).
type CandidateLine struct {
	// ID is the task, Model the model, Sample the sample (-1 for a
	// prediction, which has none).
	ID     string
	Model  string
	Sample int
	// Patch is the patch to grade (a trajectory's submitted patch, else
	// its final diff; a prediction's model_patch); From names its field.
	Patch, From string
	// Completion is the trajectory's completion tokens (0 for a
	// prediction).
	Completion int64
	// Messages are the trajectory's messages (none for a prediction).
	Messages []model.Message
}

// ParseCandidate reads one line of predictions or trajectories.
func ParseCandidate(line []byte) (CandidateLine, error) {
	c, _, err := decodeCandidate(line)
	if err != nil {
		return CandidateLine{}, err
	}
	id, model, sample, err := c.identity()
	if err != nil {
		return CandidateLine{}, err
	}
	patch, from := c.graded()
	cl := CandidateLine{ID: id, Model: model, Sample: sample, Patch: patch, From: from}
	if c.isTrajectory {
		cl.Completion, cl.Messages = c.Tokens.Completion, c.Messages
	}
	return cl, nil
}
