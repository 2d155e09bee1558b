package reward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	"cwm/internal/batch"
	"cwm/internal/env"
	"cwm/internal/jsonl"
	"cwm/internal/shard"
	"cwm/internal/task"
)

// ScoreOptions configure a scoring run: the lines of a file of
// predictions or trajectories graded against their tasks (cwm reward).
type ScoreOptions struct {
	// Tasks are what the lines are graded against, by id.
	Tasks []task.Task
	// In holds SWE-bench predictions or cwm trajectories (JSONL).
	In string
	// Out is the scored output (JSONL), appended to and resumed: lines
	// already in it are not graded again.
	Out     string
	Mapping Mapping
	// Store holds the tasks' environments.
	Store *env.Store
	// Workers grade at once (default 1).
	Workers int
	// Shard takes the task groups (task and model) whose key falls in it.
	Shard shard.Shard
	// Progress receives a progress bar; nil for none.
	Progress io.Writer
}

// LineError is a line that was not graded, and why.
type LineError struct {
	Line  int    `json:"line"`
	ID    string `json:"id,omitempty"`
	Error string `json:"error"`
}

// job is one line to grade.
type job struct {
	line   int
	fields []field
	group  string
	t      *task.Task
	patch  string
	from   string
	isPred bool
	sample int
	result Result
	reward float64
	err    error
}

// Scoring is a planned scoring run: what Out already holds, and the lines
// of In left to grade.
type Scoring struct {
	opts   ScoreOptions
	jobs   []*job
	groups map[string]int       // lines of each group in In, graded ones included
	prior  map[string][]float64 // rewards already in Out, per group
	// Unknown counts the lines of In whose task is not in Tasks, by task;
	// Bad lists those that are neither predictions nor trajectories, or
	// repeat another's task, model and sample; Skipped counts those Out
	// already holds.
	Unknown UnknownTasks
	Bad     []LineError
	Skipped int
}

// NewScoring reads Out (to resume) and In (every line checked before
// anything is graded).
func NewScoring(opts ScoreOptions) (*Scoring, error) {
	byID := make(map[string]*task.Task, len(opts.Tasks))
	for i := range opts.Tasks {
		byID[opts.Tasks[i].InstanceID] = &opts.Tasks[i]
	}
	s := &Scoring{opts: opts, groups: map[string]int{}, prior: map[string][]float64{}, Unknown: UnknownTasks{}}
	// Lines already written, to resume, and their rewards per group, for
	// the advantages of groups partly written by an earlier run.
	done := map[string]bool{}
	err := jsonl.Scan(opts.Out, func(n int, line []byte) error {
		c, _, err := decodeCandidate(line)
		if err != nil {
			return err
		}
		id, model, sample, err := c.identity()
		if err != nil || sample < 0 {
			return fmt.Errorf("not a line cwm reward wrote (no id or sample)")
		}
		done[lineKey(id, model, sample)] = true
		var r float64
		if c.Reward != nil {
			r = *c.Reward
		}
		s.prior[groupKey(id, model)] = append(s.prior[groupKey(id, model)], r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot resume: %w", err)
	}
	if err := s.readInput(byID, done); err != nil {
		return nil, err
	}
	return s, nil
}

// Pending is how many lines the run will grade.
func (s *Scoring) Pending() int { return len(s.jobs) }

// readInput reads In into the jobs still to do, the number of lines of
// each task group (done ones included), the unknown tasks, the lines that
// are neither predictions nor trajectories, and how many were done before.
func (s *Scoring) readInput(byID map[string]*task.Task, done map[string]bool) error {
	ordinal := map[string]int{} // predictions of one task and model so far
	seen := map[string]int{}
	err := jsonl.ScanInput(s.opts.In, func(n int, line []byte) error {
		cand, fields, err := decodeCandidate(line)
		var id, model string
		sample := 0
		if err == nil {
			id, model, sample, err = cand.identity()
		}
		if err != nil {
			s.Bad = append(s.Bad, LineError{Line: n, Error: "not a prediction or trajectory: " + err.Error()})
			return nil
		}
		t, ok := byID[id]
		if !ok {
			s.Unknown[id]++
			return nil
		}
		g := groupKey(id, model)
		if !s.opts.Shard.Has(g) {
			return nil
		}
		if sample < 0 {
			// Predictions have no sample field: number them per task and
			// model in input order, and record the number.
			sample = ordinal[g]
			ordinal[g]++
		}
		key := lineKey(id, model, sample)
		if prev, dup := seen[key]; dup {
			s.Bad = append(s.Bad, LineError{Line: n, ID: id, Error: fmt.Sprintf("same task, model and sample as line %d", prev)})
			return nil
		}
		seen[key] = n
		s.groups[g]++
		if done[key] {
			s.Skipped++
			return nil
		}
		patch, from := cand.graded()
		s.jobs = append(s.jobs, &job{line: n, fields: fields, group: g, t: t, patch: patch, from: from,
			isPred: !cand.isTrajectory, sample: sample})
		return nil
	})
	// A cut-off last line is a bad line: the lines before it are graded.
	var torn *jsonl.TornLineError
	if errors.As(err, &torn) {
		s.Bad = append(s.Bad, LineError{Line: torn.Line, Error: fmt.Sprintf("the last line is cut off (%d bytes, no newline at the end of the file, not valid JSON)", torn.Size)})
		err = nil
	}
	return err
}

// Run grades the pending lines in sandboxes of sbs (nil when nothing is
// pending), opts.Workers at once, on batch.RunStage: it writes each task
// group once all its lines are graded, with the advantages over the
// group, and marks the shard finished when no line failed. It returns
// the summary of the whole of Out and the lines that could not be graded
// (their environment is missing, the task cannot be graded), sorted by
// line. The error is for a run that could not go on.
func (s *Scoring) Run(ctx context.Context, sbs *env.Sandboxes) (*ScoreSummary, []LineError, error) {
	errs, err := s.gradeAll(ctx, sbs)
	if err != nil {
		return nil, errs, err
	}
	sum, err := s.summarize(len(s.jobs)-len(errs), append(append([]LineError{}, s.Bad...), errs...))
	return sum, errs, err
}

// gradeFailed is a line that could not be graded once its group's other
// lines are written: the stage sets it aside (not written, graded again
// by the next run, the shard left unfinished).
type gradeFailed struct{ error }

func (s *Scoring) gradeAll(ctx context.Context, sbs *env.Sandboxes) ([]LineError, error) {
	envs := &envCache{store: s.opts.Store, envs: map[string]*env.Env{}}
	// Lines of a group go out together; pending counts what is missing.
	pending := map[string]int{}
	members := map[string][]*job{}
	for _, j := range s.jobs {
		pending[j.group]++
		members[j.group] = append(members[j.group], j)
	}
	// The shard's marker counts the lines of Out: earlier runs' and these.
	lines := 0
	for _, p := range s.prior {
		lines += len(p)
	}
	var errs []LineError
	_, err := batch.RunStage(ctx, batch.Job[*job, Result]{Stage: &Stage, Plan: &batch.Plan[*job]{Mine: s.jobs, Todo: s.jobs},
		Out: s.opts.Out, Shard: s.opts.Shard, Inputs: []string{s.opts.In}, Workers: s.opts.Workers,
		Progress: s.opts.Progress, Label: "grade", QuietIdle: true,
		Do: func(ctx context.Context, _ int, j *job) (Result, error) {
			e, err := envs.get(j.t)
			if err != nil {
				return Result{}, err
			}
			return Grade(ctx, sbs, e, j.t, j.patch)
		},
		Write: func(w *jsonl.Writer, j *job, r Result, err error) (string, error) {
			j.result, j.err = r, err
			outcome := ""
			if err != nil {
				errs = append(errs, LineError{Line: j.line, ID: j.t.InstanceID, Error: err.Error()})
			} else {
				var sim *float64
				if r.Similarity != nil {
					sim = &r.Similarity.Mean
				}
				j.reward = s.opts.Mapping.Reward(r.Resolved, sim)
				if r.Resolved {
					outcome = "resolved"
				}
			}
			if pending[j.group]--; pending[j.group] == 0 {
				n, err := s.writeGroup(w, members[j.group], s.groups[j.group], s.prior[j.group])
				if err != nil {
					return "", fmt.Errorf("write %s: %w", s.opts.Out, err)
				}
				lines += n
			}
			if j.err != nil {
				return "", gradeFailed{j.err}
			}
			return outcome, nil
		},
		Aside: func(_ *job, err error) string {
			if errors.As(err, new(gradeFailed)) {
				return "error"
			}
			return ""
		},
		Finished: func(batch.Plan[*job]) int { return lines }})
	sort.Slice(errs, func(a, b int) bool { return errs[a].Line < errs[b].Line })
	return errs, err
}

// writeGroup writes the graded lines of one task group. The advantage is
// over every graded sample of the group, those an earlier run wrote
// (prior) included; a group of one sample has none. It returns how many
// lines it wrote.
func (s *Scoring) writeGroup(w *jsonl.Writer, js []*job, size int, prior []float64) (int, error) {
	rewards := append([]float64{}, prior...)
	var ok []*job
	for _, j := range js {
		if j.err == nil {
			rewards = append(rewards, j.reward)
			ok = append(ok, j)
		}
	}
	adv := Advantages(rewards)[len(prior):]
	for i, j := range ok {
		var advantage *float64
		if size > 1 {
			advantage = &adv[i]
		}
		if err := w.WriteRaw(s.outputLine(j, advantage)); err != nil {
			return 0, err
		}
	}
	return len(ok), nil
}

// outputLine is j's input line with the grading's fields set.
func (s *Scoring) outputLine(j *job, advantage *float64) []byte {
	r, m := j.result, s.opts.Mapping
	f := j.fields
	if j.isPred {
		f = setField(f, "sample", j.sample)
	}
	f = setField(f, "resolved", r.Resolved)
	f = setField(f, "reward", j.reward)
	var sim *float64
	var perFile map[string]float64
	details := map[string]any{
		"env_id": j.t.EnvID, "reward_kind": m.Kind, "similarity_threshold": m.Threshold,
		"reason": r.Reason, "apply_log": r.ApplyLog, "test_note": r.TestNote,
		"similarity_error": r.SimilarityError, "seconds": r.Seconds,
	}
	if m.Kind == "cwm" && m.Scale > 0 {
		details["cwm_scale"] = m.Scale
	}
	if sc := r.Similarity; sc != nil {
		sim, perFile = &sc.Mean, sc.PerFile
		details["predicted_error"] = sc.PredictedError
		if len(sc.Ignored) > 0 {
			details["ignored_files"] = sc.Ignored
		}
	}
	for k, v := range details {
		if v == "" {
			delete(details, k)
		}
	}
	f = setField(f, "similarity", sim)
	f = setField(f, "similarity_per_file", perFile)
	tests := r.Tests
	if tests == nil {
		tests = []TestOutcome{}
	}
	f = setField(f, "hidden_tests", tests)
	f = setField(f, "apply", r.Apply)
	f = setField(f, "graded_patch", j.from)
	f = setField(f, "advantage", advantage)
	f = setField(f, "grading", details)
	return marshalFields(f)
}

// envCache resolves task environments once each, for concurrent workers.
type envCache struct {
	store *env.Store
	mu    sync.Mutex
	envs  map[string]*env.Env // by env_id, guarded by mu; nil for a missing one
}

func (c *envCache) get(t *task.Task) (*env.Env, error) {
	if t.EnvID == "" {
		return nil, fmt.Errorf("task %s has no env_id", t.InstanceID)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.envs[t.EnvID]
	if !ok {
		e = c.store.Get(t.EnvID)
		c.envs[t.EnvID] = e
	}
	if e == nil {
		return nil, fmt.Errorf("environment %s of task %s is not in %s (see cwm env ls)", t.EnvID, t.InstanceID, c.store.Dir())
	}
	return e, nil
}
