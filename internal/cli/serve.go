package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"cwm/internal/agent"
	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/envserver"
	"cwm/internal/episode"
	"cwm/internal/sandbox"
	"cwm/internal/task"
	"cwm/internal/tracer"
)

type serveCmd struct {
	listen, token, tokenFile string
	noAuth                   bool
	tasks, traces, envs      command.StringList
	kind, protocol, toolRole string
	history                  string
	maxSessions, templates   int
	maxCheckpoints           int
	checkpointBytes          command.ByteSize
	idleTimeout, drainGrace  time.Duration
	bodyTimeout              time.Duration
	limits                   agent.Limits
	maxMessage               command.ByteSize
	trajectories, addrFile   string
	envName                  string
	logFormat, logLevel      string
	traceWorkers             int
	gradeFlags
	sim simFlags
}

func (*serveCmd) Name() string { return "serve" }
func (*serveCmd) Synopsis() string {
	return "serve environments to RL trainers (OpenEnv's protocol, REST, branching)"
}
func (*serveCmd) Usage() string {
	return `[--listen 127.0.0.1:8000] [--tasks TASKS.jsonl]... [--traces TRACES.jsonl]... [flags]
Serves cwm's environments over OpenEnv's wire protocol (WebSocket /ws with
reset, step, state and close; GET /health, /schema, /metadata; the Task
API), so that OpenEnv's client (openenv 0.10, openenv-core 0.3, tested)
works unchanged, plus cwm's extensions: a clone message that branches an episode, a REST
API (POST /v1/episodes, /v1/episodes/ID/step, /v1/episodes/ID/clone,
GET and DELETE /v1/episodes/ID), checkpoints (/ws checkpoint, checkpoints,
rollback, branch and release_checkpoint messages; REST under
/v1/episodes/ID/checkpoints), /metrics in Prometheus' format, and
NeMo Gym's resources-server API (POST /seed_session, /verify,
/aggregate_metrics, and POST /TOOL for each tool of a swe episode).

Episodes are of three kinds: swe (a task of --tasks, the SWE tools through
the cwm or openai protocol, a submitted patch graded as cwm reward grades
it), trace (predict the next frame of a trace of --traces, or of code and
a call traced at reset; teacher forced, rewarded per frame) and shell (a
sandbox on an environment with the SWE tools, no task).

Every episode is owned: it closes when its client closes it, when its
WebSocket drops, after --idle-timeout without a message, and when the
server stops. SIGTERM (or SIGINT) drains: no new episodes, in-flight steps
get --drain-grace to finish, every sandbox closes, exit status 0. A token
(--token, --token-file or $CWM_SERVE_TOKEN) is required on any address
but loopback unless --no-auth. See docs/serve.md.

With --sim-model and --sim-base-url, a swe reset may ask for
"backend": "sim" (--backend sim makes it the default): a world model
answers the commands that execute code, corrected every --real-every
commands by a real run; --sim-reward predicts the reward instead of the
real grading, flagged reward_predicted. See docs/sim.md.

Examples:
  cwm serve --tasks tasks.jsonl --trajectories traj.jsonl
  CWM_SERVE_TOKEN=secret cwm serve --listen :8000 --tasks tasks.jsonl --max-sessions 256
  cwm serve --kind shell --env textkit`
}

func (c *serveCmd) Flags(fs *flag.FlagSet) {
	d := agent.DefaultLimits
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8000", "`address` to listen on (host:port; :8000 is every interface)")
	fs.StringVar(&c.token, "token", "", "`token` clients must present (default $CWM_SERVE_TOKEN)")
	fs.StringVar(&c.tokenFile, "token-file", "", "`file` holding the token")
	fs.BoolVar(&c.noAuth, "no-auth", false, "serve without a token on an address other than loopback (a network behind its own policy)")
	fs.Var(&c.tasks, "tasks", "tasks `file` whose tasks swe episodes name (repeatable)")
	fs.Var(&c.traces, "traces", "traces `file` (trace func or trace repo output) whose traces trace episodes name (repeatable)")
	fs.Var(&c.envs, "env", "environment shell episodes may use (repeatable; default: every usable one)")
	fs.StringVar(&c.kind, "kind", "", "kind of a reset that names none, and of /schema: swe, trace or shell (default swe with --tasks, else shell)")
	fs.StringVar(&c.protocol, "protocol", "cwm", "tool protocol of a reset that names none: cwm or openai")
	fs.StringVar(&c.toolRole, "tool-role", "tool", "`role` of tool results in the cwm protocol: tool or user")
	fs.StringVar(&c.history, "history", "squash", "how a task's bug is hidden in git: squash or amend")
	fs.IntVar(&c.maxSessions, "max-sessions", 64, "episodes open at once (a /ws connection without one counts)")
	fs.IntVar(&c.maxCheckpoints, "max-checkpoints", 32, "checkpoints one episode may hold (past it: CHECKPOINT_LIMIT)")
	c.checkpointBytes = 1 << 30
	fs.Var(&c.checkpointBytes, "checkpoint-bytes", "memory one episode's checkpoints may hold in frozen layers (`size`; past it: CHECKPOINT_LIMIT)")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 10*time.Minute, "close an episode or connection without a message for this long (0: never)")
	fs.DurationVar(&c.limits.CommandTimeout, "step-timeout", d.CommandTimeout, "limit of one bash command: it is killed, the observation says so, the episode goes on")
	fs.IntVar(&c.limits.MaxTurns, "max-turns", d.MaxTurns, "steps per episode")
	fs.IntVar(&c.limits.ContextTokens, "context", d.ContextTokens, "context window in `tokens` (the budget and the context exit)")
	fs.IntVar(&c.limits.MaxFormatErrors, "format-errors", d.MaxFormatErrors, "consecutive steps without a runnable tool call that end an episode")
	fs.DurationVar(&c.limits.WallTime, "episode-timeout", d.WallTime, "wall-clock limit of an episode, checked at each step")
	c.maxMessage = 16 << 20
	fs.Var(&c.maxMessage, "max-message-bytes", "largest /ws message or REST body (`size`: 16M, 1G, ...)")
	fs.DurationVar(&c.bodyTimeout, "body-timeout", 30*time.Second, "how long a request's body may take to arrive once its headers have")
	fs.DurationVar(&c.drainGrace, "drain-grace", 30*time.Second, "on SIGTERM, how long in-flight steps may take")
	fs.IntVar(&c.templates, "templates", 64, "prepared tasks kept so that resets copy them")
	fs.StringVar(&c.trajectories, "trajectories", "", "append every finished swe and shell episode to this `file` (JSONL trajectories)")
	fs.StringVar(&c.envName, "env-name", "", "the environment's `name` in OpenEnv's Task API (default cwm-KIND)")
	fs.StringVar(&c.addrFile, "addr-file", "", "write the server's URL to this `file` once it listens (for --listen with port 0)")
	fs.StringVar(&c.logFormat, "log-format", "text", "log lines as text or json")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug (one line per request), info, warn, error")
	c.sim.register(fs)
	fs.IntVar(&c.traceWorkers, "trace-workers", 2, "tracer workers for trace resets that bring code and a call")
	c.gradeFlags.register(fs)
}

// loopback reports whether addr listens on loopback only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveToken is the token from --token, --token-file or $CWM_SERVE_TOKEN.
func (c *serveCmd) serveToken() (string, error) {
	switch {
	case c.token != "" && c.tokenFile != "":
		return "", command.Usagef("give --token or --token-file, not both")
	case c.tokenFile != "":
		b, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return "", fmt.Errorf("read the token: %w", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", command.Usagef("--token-file %s is empty", c.tokenFile)
		}
		return t, nil
	case c.token != "":
		return c.token, nil
	}
	return os.Getenv("CWM_SERVE_TOKEN"), nil
}

func (c *serveCmd) logger(e *command.Env) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, command.Usagef("--log-level %q: want debug, info, warn or error", c.logLevel)
	}
	if os.Getenv("CWM_DEBUG") != "" {
		level = slog.LevelDebug
	}
	o := &slog.HandlerOptions{Level: level}
	switch c.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(e.Stderr, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(e.Stderr, o)), nil
	}
	return nil, command.Usagef("--log-format %q: want text or json", c.logFormat)
}

func (c *serveCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("unexpected arguments %q", args)
	}
	switch {
	case c.maxSessions < 1 || c.templates < 1 || c.traceWorkers < 1 || c.maxCheckpoints < 1:
		return command.Usagef("--max-sessions, --templates, --trace-workers and --max-checkpoints must be at least 1")
	case c.checkpointBytes < 1<<20:
		return command.Usagef("--checkpoint-bytes must be at least 1M")
	case c.limits.MaxTurns < 1 || c.limits.ContextTokens < 1 || c.limits.MaxFormatErrors < 1:
		return command.Usagef("--max-turns, --context and --format-errors must be at least 1")
	case c.limits.CommandTimeout < time.Second || c.drainGrace <= 0 || c.bodyTimeout <= 0 || c.idleTimeout < 0 || c.limits.WallTime <= 0:
		return command.Usagef("--step-timeout must be at least 1s; --drain-grace, --body-timeout and --episode-timeout positive; --idle-timeout not negative")
	case c.maxMessage < 1024:
		return command.Usagef("--max-message-bytes must be at least 1K")
	}
	if h := episode.History(c.history); h != episode.HistorySquash && h != episode.HistoryAmend {
		return command.Usagef("--history %q: want squash or amend", c.history)
	}
	if err := c.mapping.Validate(); err != nil {
		return err
	}
	log, err := c.logger(e)
	if err != nil {
		return err
	}
	token, err := c.serveToken()
	if err != nil {
		return err
	}
	if c.noAuth && token != "" {
		return command.Usagef("--no-auth and a token exclude each other")
	}
	if token == "" && !c.noAuth && !loopback(c.listen) {
		return command.Usagef("--listen %s is not loopback: give a token (--token, --token-file, $CWM_SERVE_TOKEN) or --no-auth", c.listen)
	}
	if c.token != "" {
		log.Warn("--token is visible to every user of this machine (ps); prefer --token-file or $CWM_SERVE_TOKEN")
	}
	// Each file is a split of the Task API, named by its base name.
	var tasks []task.Task
	var taskSplits, traceSplits []envserver.Split
	for _, p := range c.tasks {
		ts, err := task.Load(p)
		if err != nil {
			return fmt.Errorf("load tasks: %w", err)
		}
		tasks = append(tasks, ts...)
		sp := envserver.Split{Name: splitName(p, taskSplits)}
		for _, t := range ts {
			sp.IDs = append(sp.IDs, t.InstanceID)
		}
		taskSplits = append(taskSplits, sp)
	}
	var traces []envserver.TraceRecord
	skipped := 0
	for _, p := range c.traces {
		recs, n, err := envserver.LoadTraces([]string{p})
		if err != nil {
			return fmt.Errorf("load traces: %w", err)
		}
		traces, skipped = append(traces, recs...), skipped+n
		sp := envserver.Split{Name: splitName(p, traceSplits)}
		for _, r := range recs {
			sp.IDs = append(sp.IDs, r.ID)
		}
		traceSplits = append(traceSplits, sp)
	}
	if skipped > 0 {
		log.Info("traces skipped: not complete", "skipped", skipped)
	}
	simOpts, _, err := c.sim.options()
	if err != nil {
		return err
	}
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: e.Home, Log: log, Warm: 16})
	if err != nil {
		return fmt.Errorf("start sandbox runtime: %w", err)
	}
	defer rt.Close()
	opts := envserver.Options{
		Sandboxes: env.NewSandboxes(rt), Store: env.NewStore(e.Home), Tasks: tasks, Traces: traces,
		Kind: c.kind, Protocol: c.protocol, ToolRole: c.toolRole, History: episode.History(c.history),
		Limits: c.limits, Mapping: c.mapping, Sim: simOpts, Backend: c.sim.backend, MaxSessions: c.maxSessions, IdleTimeout: c.idleTimeout,
		MaxCheckpoints: c.maxCheckpoints, CheckpointBytes: int64(c.checkpointBytes),
		MaxMessageBytes: int64(c.maxMessage), DrainGrace: c.drainGrace, BodyTimeout: c.bodyTimeout, Templates: c.templates,
		Token: token, Trajectories: c.trajectories, Version: Version, Log: log, EnvName: c.envName,
		NewTracer: func(ctx context.Context) (*tracer.Pool, error) {
			return tracer.NewPool(ctx, rt, tracer.Options{Workers: c.traceWorkers, Log: log})
		},
	}
	if c.idleTimeout == 0 {
		opts.IdleTimeout = -1
	}
	switch kind := c.kind; {
	case kind == "swe" || kind == "" && len(tasks) > 0:
		opts.Splits = taskSplits
	case kind == "trace":
		opts.Splits = traceSplits
	}
	if len(c.envs) > 0 {
		opts.Envs = c.envs
	}
	srv, err := envserver.New(opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		srv.Close()
		return command.Usagef("--listen %s: %v", c.listen, err)
	}
	url := envserver.Addr(ln)
	if c.addrFile != "" {
		if err := os.WriteFile(c.addrFile, []byte(url+"\n"), 0o644); err != nil {
			ln.Close()
			srv.Close()
			return fmt.Errorf("write --addr-file: %w", err)
		}
	}
	fmt.Fprintf(e.Stdout, "cwm serve: listening on %s\n", url)
	if err := srv.Serve(ctx, ln); err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout, "cwm serve: drained and stopped")
	return nil
}

// splitName is the Task API's name of the split of a tasks or traces
// file: its base name without the extension, numbered if an earlier file
// has the same.
func splitName(path string, earlier []envserver.Split) string {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	name := base
	for n := 2; slices.ContainsFunc(earlier, func(s envserver.Split) bool { return s.Name == name }); n++ {
		name = fmt.Sprintf("%s-%d", base, n)
	}
	return name
}
