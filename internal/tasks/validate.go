package tasks

import (
	"context"
	"fmt"
	"io"
	"time"

	"cwm/internal/batch"
	"cwm/internal/env"
	"cwm/internal/jsonl"
	"cwm/internal/sandbox"
	"cwm/internal/shard"
	"cwm/internal/task"
)

// ValidateOptions configure Validate.
type ValidateOptions struct {
	// Store holds the tasks' environments.
	Store *env.Store
	// Workers check tasks at once (default 1), each in sandboxes of its
	// own.
	Workers int
	// Runs is how many times each check runs (default 1).
	Runs int
	// TimeoutFactor as in MutateOptions.
	TimeoutFactor float64
	// Shard takes the tasks whose instance id falls in it (default all).
	Shard    shard.Shard
	Progress io.Writer
	// Out, when set, is replaced by the verdicts when the run ends, and
	// the shard's marker written beside it; Inputs are the tasks files
	// the marker records.
	Out    string
	Inputs []string
}

// Verdict says whether one task holds.
type Verdict struct {
	InstanceID string   `json:"instance_id"`
	OK         bool     `json:"ok"`
	Problem    string   `json:"problem,omitempty"`
	Checks     []string `json:"checks"`
	TestsRun   int      `json:"tests_run"`
	Seconds    float64  `json:"seconds"`
}

// Validate re-verifies tasks on their environments, in sandboxes of sbs:
// the buggy tree fails every FAIL_TO_PASS test (a no-op patch does not
// resolve the task), and the gold tree passes every FAIL_TO_PASS and
// PASS_TO_PASS test. It returns a verdict per task of opts.Shard, in the
// tasks' order. A task that does not hold is a Verdict with its problem;
// the error is for failures of cwm.
func Validate(ctx context.Context, sbs *env.Sandboxes, tasks []task.Task, opts ValidateOptions) ([]Verdict, error) {
	if opts.Workers < 1 {
		opts.Workers = 1
	}
	if opts.Runs < 1 {
		opts.Runs = 1
	}
	var mine []*task.Task
	for i := range tasks {
		if opts.Shard.Has(tasks[i].InstanceID) {
			mine = append(mine, &tasks[i])
		}
	}
	verifiers := map[string]*verifier{}
	for _, t := range mine {
		if _, ok := verifiers[t.EnvID]; ok {
			continue
		}
		if e := opts.Store.Get(t.EnvID); e != nil {
			verifiers[t.EnvID] = newVerifier(e, newBudget(e, opts.TimeoutFactor), true)
		} else {
			verifiers[t.EnvID] = nil
		}
	}

	// Each worker keeps a sandbox per environment, reset between tasks.
	boxes := make([]map[string]*sandbox.Sandbox, opts.Workers)
	defer func() {
		for _, m := range boxes {
			for _, sb := range m {
				sb.Close()
			}
		}
	}()
	verdicts := make([]Verdict, len(mine))
	order := make(map[*task.Task]int, len(mine))
	for i, t := range mine {
		order[t] = i
	}
	// The verdicts are written in the tasks' order once all are in.
	_, err := batch.RunStage(ctx, batch.Job[*task.Task, Verdict]{Stage: &ValidateStage, Items: mine,
		Key: func(t *task.Task) string { return t.InstanceID }, Out: opts.Out, Inputs: opts.Inputs,
		Workers: opts.Workers, Progress: opts.Progress, Label: "tasks validate",
		Do: func(ctx context.Context, w int, t *task.Task) (Verdict, error) {
			if boxes[w] == nil {
				boxes[w] = map[string]*sandbox.Sandbox{}
			}
			return validateOne(ctx, sbs, boxes[w], verifiers, t, opts.Runs)
		},
		Write: func(_ *jsonl.Writer, t *task.Task, v Verdict, err error) (string, error) {
			if err != nil {
				return "", fmt.Errorf("validate %s: %w", t.InstanceID, err)
			}
			verdicts[order[t]] = v
			if v.OK {
				return "ok", nil
			}
			return "failed", nil
		},
		AtEnd: func(out string) error { return jsonl.ReplaceWith(out, verdicts) },
	})
	if err != nil {
		return nil, err
	}
	return verdicts, nil
}

// validateOne checks t in a sandbox of boxes (one per environment, made
// as needed).
func validateOne(ctx context.Context, sbs *env.Sandboxes, boxes map[string]*sandbox.Sandbox, verifiers map[string]*verifier, t *task.Task, runs int) (Verdict, error) {
	start := time.Now()
	out := Verdict{InstanceID: t.InstanceID}
	v := verifiers[t.EnvID]
	if v == nil {
		out.Problem = fmt.Sprintf("environment %s is not in the store", t.EnvID)
		return out, nil
	}
	if len(t.FailToPass) == 0 {
		out.Problem = "FAIL_TO_PASS is empty"
		return out, nil
	}
	sb := boxes[t.EnvID]
	if sb == nil {
		var err error
		if sb, err = sbs.Open(ctx, v.env); err != nil {
			return out, err
		}
		boxes[t.EnvID] = sb
	}
	var vd verdict
	for run := 1; run <= runs && vd.problem == ""; run++ {
		if err := v.checkBug(ctx, sb, t, run, false, &vd); err != nil {
			return out, err
		}
	}
	if vd.problem == "" {
		if err := v.checkGold(ctx, sb, t, runs, false, &vd); err != nil {
			return out, err
		}
	}
	out.OK = vd.problem == ""
	out.Problem, out.Checks, out.TestsRun = vd.problem, vd.checks, vd.testsRun
	out.Seconds = roundSecs(time.Since(start))
	return out, nil
}
