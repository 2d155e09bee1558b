package selection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"cwm/internal/batch"
	"cwm/internal/env"
	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/reward"
	"cwm/internal/shard"
	"cwm/internal/task"
)

// Options configure a selection run over tasks (cwm select).
type Options struct {
	Config
	Tasks []task.Task
	// Candidates holds the candidate patches: SWE-bench predictions
	// (several lines per instance) or forage trajectories.
	Candidates string
	// K takes each task's first K candidates (trajectories by sample,
	// predictions in file order); 0 takes them all.
	K int
	// Out is the predictions file (JSONL), appended to and resumed by
	// instance_id; each task's generated tests go to TestsDir(Out).
	Out string
	// Name is the predictions' model_name_or_path.
	Name    string
	Store   *env.Store
	Workers int
	Shard   shard.Shard
	// TasksFile is the file Tasks were read from, which a shard's marker
	// records beside Candidates (empty: none).
	TasksFile string
	// Progress receives a progress bar; nil for none.
	Progress io.Writer
}

// Line is one output line: a SWE-bench prediction, and cwm's account of
// the selection.
type Line struct {
	InstanceID string `json:"instance_id"`
	ModelName  string `json:"model_name_or_path"`
	ModelPatch string `json:"model_patch"`
	*Result
	// TestsFile is the task's generated tests, relative to Out's
	// directory.
	TestsFile string `json:"tests_file"`
}

// Stage is cwm select as a batch stage: a line per task, keyed by its
// instance_id.
var Stage = batch.Stage{Name: "select", LineKey: jsonl.Field("instance_id")}

// TestsFile is what a task's tests file holds.
type TestsFile struct {
	InstanceID string          `json:"instance_id"`
	Prompt     string          `json:"prompt"`
	Tests      []GeneratedTest `json:"tests"`
	Kept       []int           `json:"kept"`
}

// TestsDir is the directory beside out that holds the tests files.
func TestsDir(out string) string { return out + ".tests" }

// TaskError is a task that could not be selected, and why.
type TaskError struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

// Run selects for every task of the shard with candidates that Out does
// not hold yet, opts.Workers at once, writing each task's tests file and
// then its line. It returns the summary of the shard's lines in Out and
// the tasks that could not be selected (the next run retries them).
func Run(ctx context.Context, sbs *env.Sandboxes, opts Options) (*Summary, []TaskError, error) {
	start := time.Now()
	groups, order, shuffles, unknown, err := readCandidates(opts)
	if err != nil {
		return nil, nil, err
	}
	byID := map[string]*task.Task{}
	for i := range opts.Tasks {
		byID[opts.Tasks[i].InstanceID] = &opts.Tasks[i]
	}
	var items []*task.Task
	for _, id := range order {
		if t := byID[id]; t != nil {
			items = append(items, t)
		}
	}
	envs := map[string]*env.Env{}
	var errs []TaskError
	run, err := batch.RunStage(ctx, batch.Job[*task.Task, *Result]{Stage: &Stage, Label: "select", Items: items,
		Key: func(t *task.Task) string { return t.InstanceID }, Out: opts.Out, Shard: opts.Shard,
		Inputs: []string{opts.TasksFile, opts.Candidates}, Workers: opts.Workers, Progress: opts.Progress, QuietIdle: true,
		Prepare: func(plan batch.Plan[*task.Task]) error {
			for _, t := range plan.Todo {
				if _, ok := envs[t.EnvID]; ok {
					continue
				}
				if t.EnvID == "" {
					return errkind.Errorf(errkind.Input, "task %s has no env_id", t.InstanceID)
				}
				e, err := opts.Store.Resolve(t.EnvID)
				if err != nil {
					return fmt.Errorf("task %s: %w", t.InstanceID, err)
				}
				envs[t.EnvID] = e
			}
			if len(plan.Todo) == 0 {
				return nil
			}
			return os.MkdirAll(TestsDir(opts.Out), 0o755)
		},
		Do: func(ctx context.Context, _ int, t *task.Task) (*Result, error) {
			return Select(ctx, sbs, opts.Config, Input{Task: t, Env: envs[t.EnvID], Cands: groups[t.InstanceID], Shuffle: shuffles[t.InstanceID]})
		},
		Write: func(w *jsonl.Writer, t *task.Task, res *Result, err error) (string, error) {
			if err == nil {
				err = writeTask(opts, t, groups[t.InstanceID], res, w)
			}
			switch {
			case err != nil:
				return "", err
			case res.Resolved != nil && *res.Resolved:
				return "resolved", nil
			case res.Winner < 0:
				return "no winner", nil
			}
			return "", nil
		},
		// A task that fails is reported and left for the next run.
		Aside: func(t *task.Task, err error) string {
			errs = append(errs, TaskError{ID: t.InstanceID, Error: err.Error()})
			return "failed"
		}})
	if err != nil {
		return nil, errs, err
	}
	plan := run.Plan
	sum, err := summarize(opts.Out, plan.Mine)
	if err != nil {
		return nil, errs, err
	}
	sum.Unknown, sum.Failed = unknown, len(errs)
	sum.Seconds = time.Since(start).Seconds()
	return sum, errs, nil
}

// readCandidates groups the candidate lines by task, in the order tasks
// first appear, each group ordered by sample (predictions by line) and cut
// to K, with each candidate's place in CWM's majority-voting shuffle
// seeded with opts.Name (shuffleSizes.ranks). unknown counts lines of
// tasks not in opts.Tasks.
func readCandidates(opts Options) (map[string][]reward.CandidateLine, []string, map[string][]int, int, error) {
	known := map[string]bool{}
	for _, t := range opts.Tasks {
		known[t.InstanceID] = true
	}
	groups := map[string][]reward.CandidateLine{}
	var order []string
	unknown := 0
	var sizes shuffleSizes
	err := jsonl.ScanInput(opts.Candidates, func(n int, line []byte) error {
		c, err := reward.ParseCandidate(line)
		if err != nil {
			return errkind.Errorf(errkind.Input, "not a prediction or trajectory: %v", err)
		}
		sizes.add(c.ID)
		if !known[c.ID] {
			unknown++
			return nil
		}
		if _, ok := groups[c.ID]; !ok {
			order = append(order, c.ID)
		}
		groups[c.ID] = append(groups[c.ID], c)
		return nil
	})
	if err != nil {
		return nil, nil, nil, 0, fmt.Errorf("read candidates: %w", err)
	}
	ranks := sizes.ranks(opts.Name)
	shuffles := map[string][]int{}
	for id, g := range groups {
		for i := range g {
			if g[i].Sample < 0 {
				g[i].Sample = i
			}
		}
		pos := make([]int, len(g)) // file positions, in sample order
		for i := range pos {
			pos[i] = i
		}
		sort.SliceStable(pos, func(a, b int) bool { return g[pos[a]].Sample < g[pos[b]].Sample })
		sorted, rank := make([]reward.CandidateLine, len(g)), make([]int, len(g))
		for i, p := range pos {
			sorted[i], rank[i] = g[p], ranks[id][p]
		}
		if opts.K > 0 && len(g) > opts.K {
			sorted, rank = sorted[:opts.K], rank[:opts.K]
		}
		groups[id], shuffles[id] = sorted, rank
	}
	return groups, order, shuffles, unknown, nil
}

// writeTask writes t's tests file, then its line.
func writeTask(opts Options, t *task.Task, cands []reward.CandidateLine, res *Result, w *jsonl.Writer) error {
	name := fileName(t.InstanceID) + ".json"
	tf := TestsFile{InstanceID: t.InstanceID, Prompt: res.Prompt, Tests: res.Tests, Kept: res.Kept}
	b, err := json.MarshalIndent(tf, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(TestsDir(opts.Out), name)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	l := Line{InstanceID: t.InstanceID, ModelName: opts.Name, Result: res,
		TestsFile: filepath.Join(filepath.Base(TestsDir(opts.Out)), name)}
	if res.Winner >= 0 {
		l.ModelPatch = cands[res.Winner].Patch
	}
	return w.Write(l)
}

// fileName makes an instance id safe as a file name.
func fileName(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r == 0 {
			return '_'
		}
		return r
	}, id)
}

// Summary describes the shard's selections in Out.
type Summary struct {
	Tasks int `json:"tasks"`
	// Failed tasks could not be selected in this run; Unknown counts
	// candidate lines whose task is not in the tasks file.
	Failed   int    `json:"failed"`
	Unknown  int    `json:"unknown_candidates"`
	Method   string `json:"method"`
	NoWinner int    `json:"no_winner"`
	// Graded is how many tasks have hidden-test verdicts; ResolvedRate
	// is the share of those whose chosen patch is resolved.
	Graded       int      `json:"graded"`
	ResolvedRate *float64 `json:"resolved_rate"`
	// Curve is the mean of the tasks' curves over k.
	Curve       []Point `json:"curve"`
	Generated   int     `json:"generated_tests"`
	Reproducing int     `json:"reproducing_tests"`
	Irrelevant  int     `json:"irrelevant_tests"`
	Broken      int     `json:"broken_tests"`
	Counts      Counts  `json:"counts"`
	Seconds     float64 `json:"seconds"`
}

func summarize(out string, mine []*task.Task) (*Summary, error) {
	want := map[string]bool{}
	for _, t := range mine {
		want[t.InstanceID] = true
	}
	sum := &Summary{Curve: []Point{}}
	var curves [][]Point
	resolved := 0
	methods := map[string]bool{}
	err := jsonl.Decode(out, func(_ int, l Line) error {
		if !want[l.InstanceID] || l.Result == nil {
			return nil
		}
		sum.Tasks++
		methods[string(l.Method)] = true
		if l.Winner < 0 {
			sum.NoWinner++
		}
		if l.Resolved != nil {
			sum.Graded++
			if *l.Resolved {
				resolved++
			}
		}
		if l.Curve != nil {
			curves = append(curves, l.Curve)
		}
		sum.Reproducing += l.Reproducing
		sum.Irrelevant += l.Irrelevant
		sum.Broken += l.Broken
		sum.Counts.Add(l.Counts)
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("summarize: %w", err)
	}
	sum.Generated = sum.Reproducing + sum.Irrelevant + sum.Broken
	var ms []string
	for m := range methods {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	sum.Method = strings.Join(ms, ",")
	if sum.Graded > 0 {
		r := float64(resolved) / float64(sum.Graded)
		sum.ResolvedRate = &r
	}
	if len(curves) > 0 {
		sum.Curve = MeanCurve(curves)
	}
	return sum, nil
}

// Write prints the summary for people.
func (s *Summary) Write(w io.Writer) {
	fmt.Fprintf(w, "tasks        %d selected (%d failed in this run, %d with no patch to pick)\n", s.Tasks, s.Failed, s.NoWinner)
	if s.Unknown > 0 {
		fmt.Fprintf(w, "skipped      %d candidate lines of tasks not in the tasks file\n", s.Unknown)
	}
	fmt.Fprintf(w, "tests        %d generated: %d reproduce the issue, %d irrelevant, %d broken\n", s.Generated, s.Reproducing, s.Irrelevant, s.Broken)
	fmt.Fprintf(w, "work         %d sandboxes, %d generated-test runs, %d regression-test runs\n", s.Counts.Sandboxes, s.Counts.GeneratedRuns, s.Counts.RegressionRuns)
	if s.ResolvedRate != nil {
		fmt.Fprintf(w, "resolved     %.1f%% of %d graded (method %s)\n", 100**s.ResolvedRate, s.Graded, s.Method)
	}
	if len(s.Curve) > 0 {
		fmt.Fprintf(w, "%-6s %8s %10s %8s %8s\n", "k", "pass@k", "majority@k", "best@k", "hybrid")
		for _, p := range s.Curve {
			h := "-"
			if p.Hybrid != nil {
				h = fmt.Sprintf("%.3f", *p.Hybrid)
			} else if p.BestVerifier != nil {
				h = fmt.Sprintf("%.3f bv", *p.BestVerifier)
			}
			fmt.Fprintf(w, "%-6d %8.3f %10.3f %8.3f %8s\n", p.K, p.Pass, p.Majority, p.Best, h)
		}
	}
	fmt.Fprintf(w, "time         %.1fs\n", s.Seconds)
}
