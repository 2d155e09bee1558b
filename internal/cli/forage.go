package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"cwm/internal/agent"
	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/jsonl"
	"cwm/internal/progress"
	"cwm/internal/shard"
	"cwm/internal/task"
)

type forageCmd struct {
	tasks, out, model, baseURL string
	protocol, toolRole         string
	history                    string
	apiKeyEnv                  string
	samples, concurrency       int
	shard                      string
	limits                     agent.Limits
	temperature, topP          optFloat
	maxTokens                  int
	seed                       optInt
	stop                       command.StringList
	retries                    int
	requestTimeout             time.Duration
	priceIn, priceOut          float64
	json, quiet                bool

	gradeFlags
	noGrade bool

	// grader, when set, scores each episode before its line is written
	// (the hidden tests unless --no-grade; tests plug in their own).
	grader agent.Grader
}

func (*forageCmd) Name() string { return "forage" }
func (*forageCmd) Synopsis() string {
	return "run an agent on tasks against a model endpoint and record trajectories"
}
func (*forageCmd) Usage() string {
	return `--tasks TASKS.jsonl --model NAME --base-url URL --out TRAJ.jsonl [flags]
Runs --samples episodes per task, --concurrency at a time. Each episode
starts a sandbox on the task's environment, plants the task's bug so that
git cannot show it, and lets the model work through the tools of
--protocol (cwm: CWM's <tool: ...> text protocol; openai: native function
calling) until it submits a patch or a limit ends it. Each episode becomes
one line of --out: the messages (OpenAI chat format), the steps, the exit
reason, the final diff, the submitted patch, tokens, cost and timings.

--out is appended to and crash safe: a re-run skips the (task, sample)
pairs already in it. --shard i/n runs the pairs whose hash falls in shard
i of n (default: Kubernetes' JOB_COMPLETION_INDEX of JOB_COMPLETIONS).
The API key is read from the variable --api-key-env names. Prints a
summary at the end (--json: as JSON). Exits 1 when an episode could not
run, or the model server failed it after its retries (model_error: such
episodes go to TRAJ.jsonl.model_errors.jsonl, not --out); a re-run retries
both. See docs/forage.md.

Examples:
  cwm forage --tasks tasks.jsonl --model Qwen/Qwen3-32B --base-url http://localhost:8000/v1 --out traj.jsonl
  cwm forage --tasks tasks.jsonl --model qwen3:32b --base-url http://localhost:11434/v1 \
      --protocol openai --samples 4 --temperature 0.7 --out traj.jsonl`
}

func (c *forageCmd) Flags(fs *flag.FlagSet) {
	d := agent.DefaultLimits
	fs.StringVar(&c.tasks, "tasks", "", "tasks `file` (JSONL, cwm's task schema)")
	fs.StringVar(&c.out, "out", "", "trajectories `file` (JSONL; appended to, resumed)")
	fs.StringVar(&c.model, "model", "", "model `name` as the server knows it")
	fs.StringVar(&c.baseURL, "base-url", "", "OpenAI-compatible endpoint `URL`, e.g. http://localhost:8000/v1")
	fs.StringVar(&c.protocol, "protocol", "cwm", "tool protocol: cwm (text tool blocks) or openai (function calling)")
	fs.StringVar(&c.toolRole, "tool-role", "tool", "`role` of tool results in the cwm protocol: tool, or user for servers that refuse tool messages without a tool_call_id")
	fs.StringVar(&c.history, "history", "squash", "how the bug is hidden in git: squash (HEAD becomes a root commit with the bug) or amend (HEAD re-made, ancestors kept: they may show the fix)")
	fs.StringVar(&c.apiKeyEnv, "api-key-env", "OPENAI_API_KEY", "environment `variable` holding the API key")
	fs.IntVar(&c.samples, "samples", 1, "episodes per task (best@k, GRPO groups)")
	fs.IntVar(&c.concurrency, "concurrency", 8, "episodes at once")
	fs.StringVar(&c.shard, "shard", "", "`i/n`: run only shard i (0-based) of n")
	fs.IntVar(&c.limits.MaxTurns, "max-turns", d.MaxTurns, "model replies per episode")
	fs.IntVar(&c.limits.ContextTokens, "context", d.ContextTokens, "context window in `tokens`")
	fs.DurationVar(&c.limits.CommandTimeout, "command-timeout", d.CommandTimeout, "limit of one bash command")
	fs.DurationVar(&c.limits.WallTime, "episode-timeout", d.WallTime, "wall-clock limit of one episode")
	fs.Float64Var(&c.limits.MaxCost, "max-cost", 0, "`USD` an episode may spend (0: no limit; needs --price-in/--price-out)")
	fs.IntVar(&c.limits.MaxFormatErrors, "format-errors", d.MaxFormatErrors, "consecutive replies without a tool call that end an episode")
	fs.BoolVar(&c.limits.Strict, "strict", false, "CWM's strict format: the first format error ends the episode and the final response needs a markdown summary")
	fs.Var(&c.temperature, "temperature", "sampling temperature (default: the server's)")
	fs.Var(&c.topP, "top-p", "nucleus sampling top_p (default: the server's)")
	fs.IntVar(&c.maxTokens, "max-tokens", 0, "completion `tokens` per reply (0: the server's default)")
	fs.Var(&c.seed, "seed", "sampling seed; sample k of a task uses seed+k")
	fs.Var(&c.stop, "stop", "stop `sequence` (repeatable)")
	fs.IntVar(&c.retries, "retries", 6, "retries of a failed model request (429, 5xx, network, timeout)")
	fs.DurationVar(&c.requestTimeout, "request-timeout", 10*time.Minute, "limit of one model request")
	fs.Float64Var(&c.priceIn, "price-in", 0, "`USD` per million prompt tokens, for costs")
	fs.Float64Var(&c.priceOut, "price-out", 0, "`USD` per million completion tokens, for costs")
	fs.BoolVar(&c.json, "json", false, "print the summary as JSON")
	fs.BoolVar(&c.quiet, "quiet", false, "print no progress")
	c.gradeFlags.register(fs)
	fs.BoolVar(&c.noGrade, "no-grade", false, "do not grade episodes (reward fields stay null; grade later with cwm reward)")
}

// pair is one episode to run: a task and a sample index.
type pair struct {
	task   *task.Task
	sample int
}

func pairKey(id string, sample int) string { return id + "\x00" + strconv.Itoa(sample) }

func (c *forageCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	switch {
	case c.tasks == "" || c.out == "" || c.model == "" || c.baseURL == "":
		return command.Usagef("--tasks, --out, --model and --base-url are required")
	case c.samples < 1 || c.concurrency < 1:
		return command.Usagef("--samples and --concurrency must be at least 1")
	case c.limits.MaxTurns < 1 || c.limits.ContextTokens < 1 || c.limits.CommandTimeout < time.Second || c.limits.WallTime <= 0 || c.limits.MaxFormatErrors < 1:
		return command.Usagef("--max-turns, --context and --format-errors must be positive, --command-timeout at least 1s")
	}
	if err := c.mapping.Validate(); err != nil {
		return command.UsageError(err.Error())
	}
	if h := agent.History(c.history); h != agent.HistorySquash && h != agent.HistoryAmend {
		return command.Usagef("--history %q: want squash or amend", c.history)
	}
	part, err := shard.Parse(c.shard)
	if err != nil {
		return command.Usagef("--shard: %v", err)
	}
	proto, err := agent.NewProtocol(c.protocol, c.toolRole)
	if err != nil {
		return command.UsageError(err.Error())
	}
	retries := c.retries
	if retries == 0 {
		retries = -1 // the client's 0 means its default
	}
	client, err := agent.NewClient(agent.ClientConfig{
		BaseURL: c.baseURL, APIKey: os.Getenv(c.apiKeyEnv), Model: c.model,
		Sampling:   agent.Sampling{Temperature: c.temperature.ptr(), TopP: c.topP.ptr(), MaxTokens: c.maxTokens, Stop: c.stop},
		MaxRetries: retries, RequestTimeout: c.requestTimeout, PriceInput: c.priceIn, PriceOutput: c.priceOut,
	})
	if err != nil {
		return command.UsageError(err.Error())
	}
	tasks, err := task.Load(c.tasks)
	if err != nil {
		return fmt.Errorf("load tasks: %w", err)
	}
	if len(tasks) == 0 {
		return fmt.Errorf("no tasks in %s", c.tasks)
	}

	// The pairs of this shard, and which of them an earlier run finished.
	var mine []pair
	for i := range tasks {
		for s := 0; s < c.samples; s++ {
			if part.Has(pairKey(tasks[i].InstanceID, s)) {
				mine = append(mine, pair{&tasks[i], s})
			}
		}
	}
	done, err := jsonl.Keys(c.out, trajectoryKey)
	if err != nil {
		return fmt.Errorf("read finished episodes: %w", err)
	}
	var todo []pair
	for _, p := range mine {
		if !done[pairKey(p.task.InstanceID, p.sample)] {
			todo = append(todo, p)
		}
	}
	envs, err := resolveEnvs(e.Home, todo)
	if err != nil {
		return err
	}
	w, err := jsonl.Append(c.out)
	if err != nil {
		return err
	}
	defer w.Close()
	sbs, closeRT, err := openSandboxes(e, 0)
	if err != nil {
		return err
	}
	defer closeRT()
	if c.grader == nil && !c.noGrade {
		c.grader = &hiddenTestGrader{sbs: sbs, envs: envs, mapping: c.mapping}
	}

	runner := &agent.Runner{Sandboxes: sbs, Client: client, Protocol: proto, Limits: c.limits,
		History: agent.History(c.history), Log: e.Log}
	var bar *progress.Bar
	if !c.quiet {
		if len(mine) > len(todo) {
			fmt.Fprintf(e.Stderr, "cwm forage: %d of %d episodes already in %s\n", len(mine)-len(todo), len(mine), c.out)
		}
		bar = progress.New(e.Stderr, "forage", len(todo))
	}
	start := time.Now()
	n := c.runAll(ctx, e, runner, w, bar, envs, todo)
	bar.Done()
	if err := ctx.Err(); err != nil {
		return err
	}
	sum, err := summarize(c.out, mine)
	if err != nil {
		return err
	}
	sum.Ran, sum.Failed, sum.ModelErrors = len(todo)-n.failed-n.modelErrors, n.failed, n.modelErrors
	sum.Seconds = time.Since(start).Seconds()
	if c.json {
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(sum)
	} else {
		sum.print(e.Stdout)
	}
	var why []string
	if n.modelErrors > 0 {
		why = append(why, fmt.Sprintf("the model server failed %d of %d episodes (model_error; kept with the reason in %s, not in %s)",
			n.modelErrors, len(todo), modelErrorsPath(c.out), c.out))
	}
	if n.failed > 0 {
		why = append(why, fmt.Sprintf("%d episodes could not run (see the log above)", n.failed))
	}
	if len(why) > 0 {
		return fmt.Errorf("%s; run again to retry them", strings.Join(why, "; "))
	}
	return nil
}

// modelErrorsPath is the file beside --out that keeps the episodes the
// model server failed (exit reason model_error). They are not in --out, so
// a re-run, which skips only the pairs in --out, runs them again: an
// outage of the server loses no sample.
func modelErrorsPath(out string) string { return out + ".model_errors.jsonl" }

// runCounts are the episodes of a run that did not end in --out.
type runCounts struct {
	failed      int // could not run (no sandbox, the bug patch does not apply, ...)
	modelErrors int // the model server failed them
}

// runAll runs the pairs on c.concurrency workers and returns how many
// did not end in --out. Each finished episode is written at once, so a
// crash loses only the episodes in flight; one the model server failed is
// written to modelErrorsPath instead, so that the next run retries it.
func (c *forageCmd) runAll(ctx context.Context, e *command.Env, runner *agent.Runner, w *jsonl.Writer, bar *progress.Bar,
	envs map[string]*env.Env, todo []pair) runCounts {
	work := make(chan pair)
	var mu sync.Mutex
	var n runCounts
	var errw *jsonl.Writer // modelErrorsPath, opened at the first model error
	defer func() {
		if errw != nil {
			errw.Close()
		}
	}()
	fail := func(p pair, err error) {
		mu.Lock()
		n.failed++
		mu.Unlock()
		fmt.Fprintf(e.Stderr, "cwm forage: %s sample %d: %v\n", p.task.InstanceID, p.sample, err)
		bar.Count("failed")
		bar.Add(1)
	}
	serverFailed := func(p pair, tr *agent.Trajectory) error {
		mu.Lock()
		defer mu.Unlock()
		if errw == nil {
			var err error
			if errw, err = jsonl.Append(modelErrorsPath(c.out)); err != nil {
				return err
			}
		}
		if err := errw.Write(tr); err != nil {
			return err
		}
		n.modelErrors++
		fmt.Fprintf(e.Stderr, "cwm forage: %s sample %d: the model server failed: %s\n", p.task.InstanceID, p.sample, tr.Error)
		bar.Count(string(tr.ExitReason))
		bar.Add(1)
		return nil
	}
	var wg sync.WaitGroup
	for i := 0; i < min(c.concurrency, len(todo)); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Ends when the work channel closes (all sent, or cancelled).
			for p := range work {
				ep := agent.Episode{Task: p.task, Sample: p.sample, Env: envs[p.task.EnvID]}
				if c.seed.set {
					s := c.seed.v + int64(p.sample)
					ep.Seed = &s
				}
				tr, err := runner.Run(ctx, ep)
				if ctx.Err() != nil {
					continue // interrupted: leave it for the next run
				}
				if err == nil && tr.ExitReason == agent.ExitModelError {
					if err = serverFailed(p, tr); err != nil {
						fail(p, err)
					}
					continue
				}
				if err == nil && c.grader != nil {
					var g agent.Grade
					if g, err = c.grader.Grade(ctx, p.task, tr); err == nil {
						tr.SetGrade(g)
					}
				}
				if err == nil {
					err = w.Write(tr)
				}
				if err != nil {
					fail(p, err)
					continue
				}
				bar.Count(string(tr.ExitReason))
				bar.Add(1)
			}
		}()
	}
send:
	for _, p := range todo {
		select {
		case work <- p:
		case <-ctx.Done():
			break send
		}
	}
	close(work)
	wg.Wait()
	return n
}

// trajectoryKey is the resume key of a trajectory line.
func trajectoryKey(line []byte) (string, error) {
	var k struct {
		TaskID *string `json:"task_id"`
		Sample *int    `json:"sample"`
	}
	if err := json.Unmarshal(line, &k); err != nil {
		return "", fmt.Errorf("decode trajectory: %w", err)
	}
	if k.TaskID == nil || k.Sample == nil {
		return "", errors.New("line without task_id and sample: not a trajectory")
	}
	return pairKey(*k.TaskID, *k.Sample), nil
}

// resolveEnvs finds the environment of every task to run, so that a
// missing one stops the run before any episode starts.
func resolveEnvs(home string, todo []pair) (map[string]*env.Env, error) {
	st := env.NewStore(home)
	envs := map[string]*env.Env{}
	for _, p := range todo {
		id := p.task.EnvID
		if _, ok := envs[id]; ok {
			continue
		}
		if id == "" {
			return nil, fmt.Errorf("task %s has no env_id", p.task.InstanceID)
		}
		en, err := st.Resolve(id)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", p.task.InstanceID, err)
		}
		envs[id] = en
	}
	return envs, nil
}

// optFloat and optInt are flags that remember whether they were given, so
// that the server's defaults apply otherwise.
type optFloat struct {
	v   float64
	set bool
}

func (o *optFloat) String() string {
	if !o.set {
		return ""
	}
	return strconv.FormatFloat(o.v, 'g', -1, 64)
}

func (o *optFloat) Set(s string) (err error) {
	o.v, err = strconv.ParseFloat(s, 64)
	o.set = err == nil
	return err
}

func (o *optFloat) ptr() *float64 {
	if !o.set {
		return nil
	}
	return &o.v
}

type optInt struct {
	v   int64
	set bool
}

func (o *optInt) String() string {
	if !o.set {
		return ""
	}
	return strconv.FormatInt(o.v, 10)
}

func (o *optInt) Set(s string) (err error) {
	o.v, err = strconv.ParseInt(s, 10, 64)
	o.set = err == nil
	return err
}

// forageSummary describes the episodes of a run's shard found in --out,
// and what became of this run's: written (Ran), could not run (Failed),
// failed by the model server (ModelErrors, kept beside --out).
type forageSummary struct {
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
	Retries          agent.Retries  `json:"retries"`
	Graded           int            `json:"graded"`
	ResolvedRate     *float64       `json:"resolved_rate"`
	Seconds          float64        `json:"seconds"`
}

func summarize(path string, mine []pair) (*forageSummary, error) {
	want := make(map[string]bool, len(mine))
	for _, p := range mine {
		want[pairKey(p.task.InstanceID, p.sample)] = true
	}
	sum := &forageSummary{ExitReasons: map[string]int{}}
	resolved, turns := 0, 0
	err := jsonl.Decode(path, func(_ int, t struct {
		TaskID         string        `json:"task_id"`
		Sample         int           `json:"sample"`
		ExitReason     string        `json:"exit_reason"`
		SubmittedPatch *string       `json:"submitted_patch"`
		Turns          int           `json:"turns"`
		Tokens         agent.Tokens  `json:"tokens"`
		Cost           float64       `json:"cost"`
		Retries        agent.Retries `json:"retries"`
		Resolved       *bool         `json:"resolved"`
	}) error {
		if !want[pairKey(t.TaskID, t.Sample)] {
			return nil
		}
		sum.Episodes++
		sum.ExitReasons[t.ExitReason]++
		if t.SubmittedPatch != nil {
			sum.Submitted++
		}
		turns += t.Turns
		sum.PromptTokens += t.Tokens.Prompt
		sum.CompletionTokens += t.Tokens.Completion
		sum.Cost += t.Cost
		sum.Retries.RateLimited += t.Retries.RateLimited
		sum.Retries.ServerError += t.Retries.ServerError
		sum.Retries.Network += t.Retries.Network
		sum.Retries.Timeout += t.Retries.Timeout
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

func (s *forageSummary) print(w io.Writer) {
	fmt.Fprintf(w, "episodes     %d (%d run now, %d could not run, %d failed by the model server)\n", s.Episodes, s.Ran, s.Failed, s.ModelErrors)
	reasons := make([]string, 0, len(s.ExitReasons))
	for r := range s.ExitReasons {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for i, r := range reasons {
		reasons[i] = fmt.Sprintf("%s %d", r, s.ExitReasons[r])
	}
	fmt.Fprintf(w, "exit reasons %s\n", strings.Join(reasons, ", "))
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
