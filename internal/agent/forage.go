package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"cwm/internal/batch"
	"cwm/internal/env"
	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/model"
	"cwm/internal/reward"
	"cwm/internal/shard"
	"cwm/internal/task"
	"cwm/internal/trajectory"
)

// ForageOptions configure a forage run: episodes of an agent on tasks,
// recorded as trajectories (cwm forage).
type ForageOptions struct {
	// Tasks are the tasks to run, Samples episodes of each (default 1).
	Tasks   []task.Task
	Samples int
	// Out is the trajectories file (JSONL), appended to and resumed: a
	// run skips the (task, sample) pairs already in it. Episodes the model
	// server failed go to ModelErrorsPath(Out) instead.
	Out string
	// Store holds the tasks' environments.
	Store *env.Store
	// Workers run episodes at once (default 1).
	Workers int
	// Shard takes the pairs whose key falls in it (default all).
	Shard shard.Shard
	// TasksFile is the file Tasks were read from, which a shard's marker
	// records (empty: none).
	TasksFile string
	// Seed, when set, is the sampling seed of sample 0 of every task;
	// sample k uses Seed+k.
	Seed *int64
	// Grade, when set, grades each episode before its line is written:
	// the submitted patch (or the final diff) against the task's hidden
	// tests (reward.Grade), mapped to a reward. Nil leaves the reward
	// fields null, for cwm reward to fill later.
	Grade *reward.Mapping
	// Progress receives a progress bar; nil for none.
	Progress io.Writer
	// OnFailure, when set, is told of each episode that made no line of
	// Out, one at a time: err says why it could not run, or tr is the
	// trajectory of one the model server failed (tr.Error says how).
	OnFailure func(t *task.Task, sample int, tr *trajectory.Trajectory, err error)
}

// ModelErrorsPath is the file beside out that keeps the episodes the
// model server failed (exit reason model_error). They are not in out, so
// a re-run, which skips only the pairs in out, runs them again: an outage
// of the server loses no sample.
func ModelErrorsPath(out string) string { return out + ".model_errors.jsonl" }

// ForageSummary describes the episodes of a run's shard found in Out, and
// what became of this run's: written (Ran), could not run (Failed),
// failed by the model server (ModelErrors, kept beside Out).
type ForageSummary struct {
	Episodes         int            `json:"episodes"`
	Ran              int            `json:"ran"`
	Failed           int            `json:"failed"`
	ModelErrors      int            `json:"model_errors"`
	ExitReasons      map[string]int `json:"exit_reasons"`
	Submitted        int            `json:"submitted_patches"`
	MeanTurns        float64        `json:"mean_turns"`
	PromptTokens     int64          `json:"prompt_tokens"`
	CompletionTokens int64          `json:"completion_tokens"`
	Cost             float64        `json:"cost"`
	Retries          model.Retries  `json:"retries"`
	Graded           int            `json:"graded"`
	ResolvedRate     *float64       `json:"resolved_rate"`
	Seconds          float64        `json:"seconds"`
}

// pair is one episode to run: a task and a sample index.
type pair struct {
	task   *task.Task
	sample int
}

func (p pair) key() string { return trajectory.Key(p.task.InstanceID, p.sample) }

// Forage is a planned forage run: the pairs of its shard, those an earlier
// run left to do, and their environments.
type Forage struct {
	r    *Runner
	opts ForageOptions
	plan batch.Plan[pair]
	envs map[string]*env.Env
}

// NewForage plans a run of r over opts: it reads what Out already holds
// and finds the environment of every episode to run, so that a missing one
// stops the run before any episode starts.
func NewForage(r *Runner, opts ForageOptions) (*Forage, error) {
	if opts.Samples < 1 {
		opts.Samples = 1
	}
	if len(opts.Tasks) == 0 {
		return nil, errkind.New(errkind.Input, "no tasks")
	}
	var pairs []pair
	for i := range opts.Tasks {
		for s := 0; s < opts.Samples; s++ {
			pairs = append(pairs, pair{&opts.Tasks[i], s})
		}
	}
	plan, err := batch.Resume(batch.Spec[pair]{Items: pairs, Key: pair.key, Out: opts.Out,
		OutKey: ForageStage.LineKey, Shard: opts.Shard})
	if err != nil {
		return nil, fmt.Errorf("read finished episodes: %w", err)
	}
	f := &Forage{r: r, opts: opts, plan: plan, envs: map[string]*env.Env{}}
	for _, p := range plan.Todo {
		id := p.task.EnvID
		if _, ok := f.envs[id]; ok {
			continue
		}
		if id == "" {
			return nil, errkind.Errorf(errkind.Input, "task %s has no env_id", p.task.InstanceID)
		}
		e, err := opts.Store.Resolve(id)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", p.task.InstanceID, err)
		}
		f.envs[id] = e
	}
	return f, nil
}

// Episodes is how many episodes the shard has; Done how many of them Out
// already holds.
func (f *Forage) Episodes() int { return len(f.plan.Mine) }
func (f *Forage) Done() int     { return f.plan.Resumed() }

// outcome is one episode's trajectory, graded when asked for.
type outcome struct{ tr *trajectory.Trajectory }

// Run runs the episodes left to do, opts.Workers at once, and returns the
// summary of the shard. Each finished episode is written at once, so a
// crash loses only the episodes in flight. An episode that could not run
// or that the model server failed is counted and reported (OnFailure), not
// an error; the error is for a run that could not go on (ctx cancelled,
// Out not writable).
func (f *Forage) Run(ctx context.Context) (*ForageSummary, error) {
	start := time.Now()
	var errw *jsonl.Writer // ModelErrorsPath, opened at the first model error
	defer func() {
		if errw != nil {
			errw.Close()
		}
	}()
	ran, failed, modelErrors := 0, 0, 0
	fail := func(p pair, tr *trajectory.Trajectory, err error) {
		if f.opts.OnFailure != nil {
			f.opts.OnFailure(p.task, p.sample, tr, err)
		}
	}
	_, err := batch.RunStage(ctx, batch.Job[pair, outcome]{Stage: &ForageStage, Label: "forage", Plan: &f.plan,
		Key: pair.key, Out: f.opts.Out, Shard: f.opts.Shard, Inputs: []string{f.opts.TasksFile},
		Params: []string{"samples", strconv.Itoa(f.opts.Samples)}, Workers: f.opts.Workers, Progress: f.opts.Progress,
		Do: func(ctx context.Context, _ int, p pair) (outcome, error) {
			a := Attempt{Task: p.task, Env: f.envs[p.task.EnvID], Sample: p.sample}
			if f.opts.Seed != nil {
				s := *f.opts.Seed + int64(p.sample)
				a.Seed = &s
			}
			tr, err := f.r.Run(ctx, a)
			// A predicted reward stands in for the real grading.
			predicted := tr != nil && tr.Sim != nil && f.r.Sim != nil && f.r.Sim.Reward != nil && !f.r.Sim.RecordOnly
			if err != nil || tr.ExitReason == trajectory.ExitModelError || f.opts.Grade == nil || predicted {
				return outcome{tr}, err
			}
			g, err := f.grade(ctx, a, tr)
			if err != nil {
				return outcome{}, err
			}
			tr.SetGrade(g)
			return outcome{tr}, nil
		},
		Write: func(w *jsonl.Writer, p pair, o outcome, err error) (string, error) {
			switch {
			case err != nil:
				return "", err
			case o.tr.ExitReason == trajectory.ExitModelError:
				if errw == nil {
					if errw, err = jsonl.Append(ModelErrorsPath(f.opts.Out)); err != nil {
						return "", err
					}
				}
				if err := errw.Write(o.tr); err != nil {
					return "", err
				}
				return "", keptAside{o.tr}
			}
			if err := w.Write(o.tr); err != nil {
				return "", err
			}
			ran++
			return string(o.tr.ExitReason), nil
		},
		// An episode the model server failed is kept beside Out; one that
		// could not run, or be written, is reported: neither is in Out,
		// so the next run runs them again.
		Aside: func(p pair, err error) string {
			var kept keptAside
			if errors.As(err, &kept) {
				modelErrors++
				fail(p, kept.tr, nil)
				return string(kept.tr.ExitReason)
			}
			failed++
			fail(p, nil, err)
			return "failed"
		}})
	if err != nil {
		return nil, err
	}
	sum, err := f.summarize()
	if err != nil {
		return nil, err
	}
	sum.Ran, sum.Failed, sum.ModelErrors = ran, failed, modelErrors
	sum.Seconds = time.Since(start).Seconds()
	return sum, nil
}

// keptAside is a model error's trajectory, kept beside the output: its
// episode is set aside for the next run.
type keptAside struct{ tr *trajectory.Trajectory }

func (k keptAside) Error() string { return "kept in " + ModelErrorsPath("OUT") }

// grade grades an episode as cwm reward would: the submitted patch, or
// the final diff when nothing was submitted, against the task's hidden
// tests in a fresh sandbox, and its similarity to the gold patch.
func (f *Forage) grade(ctx context.Context, a Attempt, tr *trajectory.Trajectory) (trajectory.Grade, error) {
	patch := tr.Patch
	if tr.SubmittedPatch != nil {
		patch = *tr.SubmittedPatch
	}
	res, err := reward.Grade(ctx, f.r.Sandboxes, a.Env, a.Task, patch)
	if err != nil {
		return trajectory.Grade{}, err
	}
	var sim *float64
	if res.Similarity != nil {
		v := res.Similarity.Mean
		sim = &v
	}
	r := f.opts.Grade.Reward(res.Resolved, sim)
	return trajectory.Grade{Reward: &r, Resolved: &res.Resolved, Similarity: sim}, nil
}

// summarize reads the shard's trajectories back from Out.
func (f *Forage) summarize() (*ForageSummary, error) {
	want := make(map[string]bool, len(f.plan.Mine))
	for _, p := range f.plan.Mine {
		want[p.key()] = true
	}
	sum := &ForageSummary{ExitReasons: map[string]int{}}
	resolved, turns := 0, 0
	err := jsonl.Decode(f.opts.Out, func(_ int, t trajectory.Trajectory) error {
		if !want[trajectory.Key(t.TaskID, t.Sample)] {
			return nil
		}
		sum.Episodes++
		sum.ExitReasons[string(t.ExitReason)]++
		if t.SubmittedPatch != nil {
			sum.Submitted++
		}
		turns += t.Turns
		sum.PromptTokens += t.Tokens.Prompt
		sum.CompletionTokens += t.Tokens.Completion
		sum.Cost += t.Cost
		sum.Retries.Add(t.Retries)
		if t.Resolved != nil {
			sum.Graded++
			if *t.Resolved {
				resolved++
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("summarize: %w", err)
	}
	if sum.Episodes > 0 {
		sum.MeanTurns = float64(turns) / float64(sum.Episodes)
	}
	if sum.Graded > 0 {
		r := float64(resolved) / float64(sum.Graded)
		sum.ResolvedRate = &r
	}
	return sum, nil
}

// Write prints the summary for people.
func (s *ForageSummary) Write(w io.Writer) {
	fmt.Fprintf(w, "episodes     %d (%d run now, %d could not run, %d failed by the model server)\n", s.Episodes, s.Ran, s.Failed, s.ModelErrors)
	fmt.Fprintf(w, "exit reasons %s\n", batch.FormatCounts(s.ExitReasons))
	fmt.Fprintf(w, "submitted    %d\n", s.Submitted)
	if s.ResolvedRate != nil {
		fmt.Fprintf(w, "resolved     %.1f%% of %d graded\n", 100**s.ResolvedRate, s.Graded)
	}
	fmt.Fprintf(w, "mean turns   %.1f\n", s.MeanTurns)
	fmt.Fprintf(w, "tokens       %d prompt, %d completion\n", s.PromptTokens, s.CompletionTokens)
	if s.Cost > 0 {
		fmt.Fprintf(w, "cost         $%.4f\n", s.Cost)
	}
	if n := s.Retries.Total(); n > 0 {
		fmt.Fprintf(w, "retries      %d (429: %d, 5xx: %d, network: %d, timeout: %d)\n", n,
			s.Retries.RateLimited, s.Retries.ServerError, s.Retries.Network, s.Retries.Timeout)
	}
	fmt.Fprintf(w, "time         %.1fs\n", s.Seconds)
}
