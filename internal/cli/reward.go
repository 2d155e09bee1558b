package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"runtime"
	"sort"
	"sync"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/jsonl"
	"cwm/internal/progress"
	"cwm/internal/reward"
	"cwm/internal/task"
)

type rewardCmd struct {
	tasks, in, out string
	gradeFlags
	concurrency int
	json        bool
}

func (*rewardCmd) Name() string { return "reward" }
func (*rewardCmd) Synopsis() string {
	return "grade predicted patches or agent trajectories with the tasks' hidden tests"
}
func (*rewardCmd) Usage() string {
	return `--tasks TASKS.jsonl --in PREDICTIONS.jsonl --out SCORED.jsonl [flags]
Grades every line of --in against its task in --tasks: in a fresh sandbox
on the task's environment, the task's bug_patch and test_patch are applied,
then the candidate patch (git apply, else patch --fuzz), and only the
task's FAIL_TO_PASS and PASS_TO_PASS tests run; the task is resolved when
all of them pass. The similarity to the task's gold patch is CWM's.

--in holds SWE-bench predictions ({"instance_id", "model_patch",
"model_name_or_path"}) or trajectories of cwm forage ("task_id",
"sample", "submitted_patch", "patch": the submitted patch is graded, or
the final diff when nothing was submitted). Each output line is the input
line with resolved, reward, similarity, similarity_per_file, hidden_tests,
apply, graded_patch, advantage (reward minus the mean reward of the
samples of the same task and model, when there are several) and grading
(details and durations) added. Lines of a task are written together once
all of them are graded. Lines already in --out are skipped, so an
interrupted run resumes. Lines naming unknown tasks are reported and
skipped. Exits 1 when a line could not be graded. See docs/rewards.md.`
}

func (c *rewardCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.tasks, "tasks", "", "tasks `file` (JSONL, cwm's task schema)")
	fs.StringVar(&c.in, "in", "", "predictions or trajectories `file` (JSONL)")
	fs.StringVar(&c.out, "out", "", "scored output `file` (JSONL; appended to, resumed)")
	c.gradeFlags.register(fs)
	fs.IntVar(&c.concurrency, "concurrency", runtime.NumCPU(), "gradings run at once")
	fs.BoolVar(&c.json, "json", false, "print the summary as JSON")
}

// candidate is what a line of --in says: whose patch, for which task.
type candidate struct {
	TaskID         *string `json:"task_id"`
	InstanceID     *string `json:"instance_id"`
	Sample         *int    `json:"sample"`
	Model          string  `json:"model"`
	ModelName      string  `json:"model_name_or_path"`
	SubmittedPatch *string `json:"submitted_patch"`
	Patch          *string `json:"patch"`
	ModelPatch     *string `json:"model_patch"`
}

// identity returns the task id, the model and the sample of a line (-1
// when the line has no sample field), or an error for a line that is
// neither a prediction nor a trajectory.
func (c candidate) identity() (id, model string, sample int, err error) {
	sample = -1
	if c.Sample != nil {
		sample = *c.Sample
	}
	switch {
	case c.TaskID != nil:
		return *c.TaskID, c.Model, sample, nil
	case c.InstanceID != nil:
		return *c.InstanceID, c.ModelName, sample, nil
	}
	return "", "", 0, errors.New("neither task_id (a trajectory) nor instance_id (a prediction)")
}

// graded returns the patch to grade and the field it came from.
func (c candidate) graded() (patch, from string) {
	switch {
	case c.TaskID != nil && c.SubmittedPatch != nil:
		return *c.SubmittedPatch, "submitted_patch"
	case c.TaskID != nil && c.Patch != nil:
		return *c.Patch, "patch"
	case c.TaskID != nil:
		return "", "patch"
	case c.ModelPatch != nil:
		return *c.ModelPatch, "model_patch"
	}
	return "", "model_patch"
}

// groupKey names a task's samples of one model; lineKey one sample.
func groupKey(id, model string) string       { return model + "\x00" + id }
func lineKey(id, model string, n int) string { return fmt.Sprintf("%s\x00%s\x00%d", model, id, n) }

// scoredLine is the part of an output line that resuming and the summary
// read.
type scoredLine struct {
	candidate
	Resolved   bool     `json:"resolved"`
	Reward     float64  `json:"reward"`
	Similarity *float64 `json:"similarity"`
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
	result reward.Result
	reward float64
	err    error
}

// lineError is a line that was not graded, and why.
type lineError struct {
	Line  int    `json:"line"`
	ID    string `json:"id,omitempty"`
	Error string `json:"error"`
}

func (c *rewardCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	if c.tasks == "" || c.in == "" || c.out == "" {
		return command.Usagef("--tasks, --in and --out are required")
	}
	if err := c.mapping.Validate(); err != nil {
		return command.UsageError(err.Error())
	}
	if c.concurrency < 1 {
		return command.Usagef("--concurrency %d is below 1", c.concurrency)
	}
	tasks, err := task.Load(c.tasks)
	if err != nil {
		return fmt.Errorf("load tasks: %w", err)
	}
	byID := make(map[string]*task.Task, len(tasks))
	for i := range tasks {
		byID[tasks[i].InstanceID] = &tasks[i]
	}
	// Lines already written, to resume, and their rewards per group, for
	// the advantages of groups partly written by an earlier run.
	done := map[string]bool{}
	prior := map[string][]float64{}
	err = jsonl.Scan(c.out, func(n int, line []byte) error {
		var s scoredLine
		if err := json.Unmarshal(line, &s); err != nil {
			return err
		}
		id, model, sample, err := s.identity()
		if err != nil || sample < 0 {
			return fmt.Errorf("not a line cwm reward wrote (no id or sample)")
		}
		done[lineKey(id, model, sample)] = true
		prior[groupKey(id, model)] = append(prior[groupKey(id, model)], s.Reward)
		return nil
	})
	if err != nil {
		return fmt.Errorf("cannot resume: %w", err)
	}
	jobs, groups, unknown, bad, skipped, err := c.readInput(byID, done)
	if err != nil {
		return err
	}
	if len(unknown) > 0 {
		fmt.Fprintf(e.Stderr, "cwm reward: skipped %d lines whose task is not in %s: %s\n", unknown.lines(), c.tasks, unknown)
	}
	for _, b := range bad {
		fmt.Fprintf(e.Stderr, "cwm reward: %s:%d: %s\n", c.in, b.Line, b.Error)
	}
	errs, err := c.gradeAll(ctx, e, jobs, groups, prior)
	if err != nil {
		return err
	}
	for _, le := range errs {
		fmt.Fprintf(e.Stderr, "cwm reward: %s:%d (%s): %s\n", c.in, le.Line, le.ID, le.Error)
	}
	if err := c.summarize(e, len(jobs)-len(errs), skipped, unknown, append(bad, errs...)); err != nil {
		return err
	}
	if len(errs) > 0 || len(bad) > 0 {
		return command.ExitStatus(1)
	}
	return nil
}

// readInput reads --in into the jobs still to do, the number of lines of
// each task group (done ones included), the unknown tasks, the lines that
// are neither predictions nor trajectories, and how many were done before.
func (c *rewardCmd) readInput(byID map[string]*task.Task, done map[string]bool) (jobs []*job, groups map[string]int, unknown unknownTasks, bad []lineError, skipped int, err error) {
	groups, unknown = map[string]int{}, unknownTasks{}
	ordinal := map[string]int{} // predictions of one task and model so far
	seen := map[string]int{}
	err = jsonl.ScanInput(c.in, func(n int, line []byte) error {
		fields, err := objectFields(line)
		var cand candidate
		if err == nil {
			err = jsonl.Unmarshal(line, &cand)
		}
		var id, model string
		sample := 0
		if err == nil {
			id, model, sample, err = cand.identity()
		}
		if err != nil {
			bad = append(bad, lineError{Line: n, Error: "not a prediction or trajectory: " + err.Error()})
			return nil
		}
		t, ok := byID[id]
		if !ok {
			unknown[id]++
			return nil
		}
		g := groupKey(id, model)
		isPred := cand.TaskID == nil
		if sample < 0 {
			// Predictions have no sample field: number them per task and
			// model in input order, and record the number.
			sample = ordinal[g]
			ordinal[g]++
		}
		key := lineKey(id, model, sample)
		if prev, dup := seen[key]; dup {
			bad = append(bad, lineError{Line: n, ID: id, Error: fmt.Sprintf("same task, model and sample as line %d", prev)})
			return nil
		}
		seen[key] = n
		groups[g]++
		if done[key] {
			skipped++
			return nil
		}
		patch, from := cand.graded()
		jobs = append(jobs, &job{line: n, fields: fields, group: g, t: t, patch: patch, from: from, isPred: isPred, sample: sample})
		return nil
	})
	// A cut-off last line is a bad line: the lines before it are graded.
	var torn *jsonl.TornLineError
	if errors.As(err, &torn) {
		bad = append(bad, lineError{Line: torn.Line, Error: fmt.Sprintf("the last line is cut off (%d bytes, no newline at the end of the file, not valid JSON)", torn.Size)})
		err = nil
	}
	return jobs, groups, unknown, bad, skipped, err
}

// gradeAll grades the jobs concurrently and writes each task group once
// all its lines are graded, with the advantages over the group.
func (c *rewardCmd) gradeAll(ctx context.Context, e *command.Env, jobs []*job, groups map[string]int, prior map[string][]float64) ([]lineError, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	w, err := jsonl.Append(c.out)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	sbs, closeRT, err := openSandboxes(e, c.concurrency)
	if err != nil {
		return nil, err
	}
	defer closeRT()
	envs := &envCache{store: env.NewStore(e.Home), envs: map[string]*env.Env{}}
	// Lines of a group go out together; pending counts what is missing.
	pending := map[string]int{}
	members := map[string][]*job{}
	for _, j := range jobs {
		pending[j.group]++
		members[j.group] = append(members[j.group], j)
	}
	bar := progress.New(e.Stderr, "grade", len(jobs))
	defer bar.Done()
	queue := make(chan *job)
	finished := make(chan *job)
	var wg sync.WaitGroup
	for range min(c.concurrency, len(jobs)) {
		wg.Go(func() {
			for j := range queue {
				en, err := envs.get(j.t)
				if err == nil {
					j.result, err = reward.Grade(ctx, sbs, en, j.t, j.patch)
				}
				j.err = err
				finished <- j
			}
		})
	}
	go func() {
		defer close(queue)
		for _, j := range jobs {
			select {
			case queue <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(finished) }()
	var errs []lineError
	var writeErr error
	for j := range finished {
		bar.Add(1)
		if j.err != nil {
			errs = append(errs, lineError{Line: j.line, ID: j.t.InstanceID, Error: j.err.Error()})
			bar.Count("error")
		} else {
			var sim *float64
			if j.result.Similarity != nil {
				sim = &j.result.Similarity.Mean
			}
			j.reward = c.mapping.Reward(j.result.Resolved, sim)
			if j.result.Resolved {
				bar.Count("resolved")
			}
		}
		if pending[j.group]--; pending[j.group] == 0 && writeErr == nil {
			writeErr = c.writeGroup(w, members[j.group], groups[j.group], prior[j.group])
		}
	}
	if writeErr != nil {
		return errs, fmt.Errorf("write %s: %w", c.out, writeErr)
	}
	if err := ctx.Err(); err != nil {
		return errs, err
	}
	sort.Slice(errs, func(a, b int) bool { return errs[a].Line < errs[b].Line })
	return errs, nil
}

// writeGroup writes the graded lines of one task group. The advantage is
// over every graded sample of the group, those an earlier run wrote
// (prior) included; a group of one sample has none.
func (c *rewardCmd) writeGroup(w *jsonl.Writer, js []*job, size int, prior []float64) error {
	rewards := append([]float64{}, prior...)
	var ok []*job
	for _, j := range js {
		if j.err == nil {
			rewards = append(rewards, j.reward)
			ok = append(ok, j)
		}
	}
	adv := reward.Advantages(rewards)[len(prior):]
	for i, j := range ok {
		var advantage *float64
		if size > 1 {
			advantage = &adv[i]
		}
		if err := w.WriteRaw(c.outputLine(j, advantage)); err != nil {
			return err
		}
	}
	return nil
}

// envCache resolves task environments once each, for concurrent workers.
type envCache struct {
	store *env.Store
	mu    sync.Mutex
	envs  map[string]*env.Env // by env_id; nil for a missing one
}

func (c *envCache) get(t *task.Task) (*env.Env, error) {
	if t.EnvID == "" {
		return nil, fmt.Errorf("task %s has no env_id", t.InstanceID)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	en, ok := c.envs[t.EnvID]
	if !ok {
		en = c.store.Get(t.EnvID)
		c.envs[t.EnvID] = en
	}
	if en == nil {
		return nil, fmt.Errorf("environment %s of task %s is not in %s (see cwm env ls)", t.EnvID, t.InstanceID, c.store.Dir())
	}
	return en, nil
}
