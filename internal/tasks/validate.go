package tasks

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"cwm/internal/envbuild"
	"cwm/internal/progress"
	"cwm/internal/sandbox"
	"cwm/internal/task"
)

// ValidateOptions configure Validate.
type ValidateOptions struct {
	// Home is $CWM_HOME, where the tasks' environments are.
	Home string
	// Workers check tasks at once (default 1).
	Workers int
	// Runs is how many times each check runs (default 1).
	Runs int
	// TimeoutFactor as in MutateOptions.
	TimeoutFactor float64
	Progress      io.Writer
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

// Validate re-verifies tasks on their environments: the buggy tree fails
// every FAIL_TO_PASS test (a no-op patch does not resolve the task), and
// the gold tree passes every FAIL_TO_PASS and PASS_TO_PASS test. A task
// that does not hold is a Verdict with its problem; the error is for
// failures of cwm.
func Validate(ctx context.Context, rt *sandbox.Runtime, tasks []task.Task, opts ValidateOptions) ([]Verdict, error) {
	if opts.Workers < 1 {
		opts.Workers = 1
	}
	if opts.Runs < 1 {
		opts.Runs = 1
	}
	store := envbuild.NewStore(opts.Home)
	verifiers := map[string]*verifier{}
	for _, t := range tasks {
		if _, ok := verifiers[t.EnvID]; ok {
			continue
		}
		if env := store.Get(t.EnvID); env != nil {
			verifiers[t.EnvID] = newVerifier(env, newBudget(env, opts.TimeoutFactor), true)
		} else {
			verifiers[t.EnvID] = nil
		}
	}
	verdicts := make([]Verdict, len(tasks))
	var bar *progress.Bar // nil draws nothing
	if opts.Progress != nil {
		bar = progress.New(opts.Progress, "tasks validate", len(tasks))
	}
	defer bar.Done()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for w := 0; w < opts.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sbs := map[string]*sandbox.Sandbox{}
			defer func() {
				for _, sb := range sbs {
					sb.Close()
				}
			}()
			for i := range jobs {
				v, err := validateOne(ctx, rt, sbs, verifiers, &tasks[i], opts.Runs)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("validate %s: %w", tasks[i].InstanceID, err)
						cancel()
					}
					mu.Unlock()
					continue
				}
				verdicts[i] = v
				if v.OK {
					bar.Count("ok")
				} else {
					bar.Count("failed")
				}
				bar.Add(1)
			}
		}()
	}
	for i := range tasks {
		select {
		case jobs <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return verdicts, ctx.Err()
}

func validateOne(ctx context.Context, rt *sandbox.Runtime, sbs map[string]*sandbox.Sandbox, verifiers map[string]*verifier, t *task.Task, runs int) (Verdict, error) {
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
	sb := sbs[t.EnvID]
	if sb == nil {
		var err error
		if sb, err = rt.New(ctx, v.env.SandboxConfig()); err != nil {
			return out, fmt.Errorf("start sandbox on %s: %w", t.EnvID, err)
		}
		sbs[t.EnvID] = sb
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
