package envserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"cwm/internal/agent"
	"cwm/internal/env"
	"cwm/internal/episode"
	"cwm/internal/reward"
	"cwm/internal/sim"
	"cwm/internal/task"
	"cwm/internal/tracer"
)

// Kinds of episode.
const (
	KindSWE   = "swe"
	KindTrace = "trace"
	KindShell = "shell"
)

// Options configure a Server. Zero fields take the defaults in
// parentheses.
type Options struct {
	// Sandboxes start the episodes' sandboxes; Store resolves the
	// environments tasks and shell episodes name.
	Sandboxes *env.Sandboxes
	Store     *env.Store
	// Tasks are the tasks swe episodes may name by id.
	Tasks []task.Task
	// Traces are the traces trace episodes may name by id (LoadTraces).
	Traces []TraceRecord
	// Splits are the Task API's splits of the tasks (swe) or traces
	// (trace): one "all" of every one, in order, when none are given.
	Splits []Split
	// EnvName is the one environment the Task API lists ("cwm-" and the
	// kind).
	EnvName string
	// Envs are the environments shell episodes may use, by id or name
	// (nil: every usable environment of Store).
	Envs []string
	// NewTracer starts the tracer pool that traces the code and call a
	// trace episode may bring; nil refuses such resets. It is called at
	// the first such reset, and the pool closed with the server.
	NewTracer func(ctx context.Context) (*tracer.Pool, error)

	// Kind is the kind of a reset that names none, and of GET /schema
	// (KindSWE when there are Tasks, else KindShell).
	Kind string
	// Protocol is the tool protocol of a reset that names none ("cwm");
	// ToolRole the role of the cwm protocol's tool results ("tool").
	Protocol, ToolRole string
	// History is how a task's bug is folded into git (squash).
	History episode.History
	// Limits bound swe and shell episodes (agent.DefaultLimits; WallTime
	// ends an episode on the step after it passes).
	Limits agent.Limits
	// Mapping turns a graded patch into the reward (cwm, threshold 0.5).
	Mapping reward.Mapping
	// Sim is the sim backend of swe episodes (docs/sim.md): nil serves
	// the real backend only; with a world model, a reset may ask for
	// backend sim, and Backend "sim" makes it the default. With its
	// RecordOnly, real episodes record their commands' contexts.
	Sim     *sim.Options
	Backend string

	// MaxSessions is how many episodes may be open at once, a /ws
	// connection without one counting as one (64).
	MaxSessions int
	// MaxCheckpoints is how many checkpoints one episode may hold (32);
	// CheckpointBytes how many bytes their frozen layers, which live in
	// memory, may hold together (1 GiB). Past either a checkpoint is
	// refused with CHECKPOINT_LIMIT.
	MaxCheckpoints  int
	CheckpointBytes int64
	// IdleTimeout closes an episode or connection without a message for
	// this long (10m); negative disables it.
	IdleTimeout time.Duration
	// MaxMessageBytes bounds a /ws message or a REST body (16 MiB).
	MaxMessageBytes int64
	// BodyTimeout bounds how long a request's body may take to arrive
	// once its headers have (30s): a client that drips its body cannot
	// hold a connection and a handler for ever.
	BodyTimeout time.Duration
	// DrainGrace is how long in-flight steps may take once the server
	// stops (30s).
	DrainGrace time.Duration
	// Templates is how many prepared tasks are kept for resets (64).
	Templates int

	// Token, when set, must be presented by every client (Bearer header
	// or token query parameter); /health needs none.
	Token string
	// Trajectories, when set, is the file every finished swe and shell
	// episode is appended to as a trajectory line.
	Trajectories string
	// Version is reported by /metadata.
	Version string
	Log     *slog.Logger
}

// Server serves episodes. Serve runs it on a listener until its context
// is cancelled.
type Server struct {
	opts    Options
	log     *slog.Logger
	tasks   map[string]*task.Task
	traces  map[string]*TraceRecord
	envs    map[string]bool // allowed shell environments; nil: all
	metrics *metrics
	tmpl    *templates
	warm    *warmer
	traj    *trajectoryLog

	// readSys reads the /proc and /sys files taskRoom checks (readProc;
	// tests give a machine at its limits).
	readSys func(string) ([]byte, error)
	// fdLimit and countFDs are the server's descriptor limit and its
	// count of open ones, for fdRoom (openFileLimit, openFiles).
	fdLimit  int
	countFDs func() int

	tracerMu sync.Mutex // guards pool
	pool     *tracer.Pool

	mu       sync.Mutex // guards the fields below
	entries  map[string]*entry
	conns    map[*wsConn]bool
	slots    int // episodes and bare /ws connections open
	draining bool

	inflight sync.WaitGroup // steps, resets and clones running
	connWG   sync.WaitGroup // /ws handlers running
	stopReap chan struct{}
	reapDone chan struct{}
	closed   atomic.Bool
}

// New checks opts and returns a server; Close releases what it holds if
// Serve is never called.
func New(opts Options) (*Server, error) {
	if opts.Sandboxes == nil || opts.Store == nil {
		return nil, errors.New("envserver: no sandboxes or store")
	}
	if opts.Kind == "" {
		opts.Kind = KindShell
		if len(opts.Tasks) > 0 {
			opts.Kind = KindSWE
		}
	}
	if opts.Kind != KindSWE && opts.Kind != KindTrace && opts.Kind != KindShell {
		return nil, fmt.Errorf("kind %q: want swe, trace or shell", opts.Kind)
	}
	if opts.Protocol == "" {
		opts.Protocol = "cwm"
	}
	if opts.EnvName == "" {
		opts.EnvName = "cwm-" + opts.Kind
	}
	if _, err := agent.NewProtocol(opts.Protocol, opts.ToolRole); err != nil {
		return nil, err
	}
	if opts.History == "" {
		opts.History = episode.HistorySquash
	}
	opts.Limits = opts.Limits.WithDefaults()
	if opts.Mapping.Kind == "" {
		opts.Mapping.Kind = "cwm"
	}
	if err := opts.Mapping.Validate(); err != nil {
		return nil, err
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 64
	}
	if opts.MaxCheckpoints <= 0 {
		opts.MaxCheckpoints = 32
	}
	if opts.CheckpointBytes <= 0 {
		opts.CheckpointBytes = 1 << 30
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = 10 * time.Minute
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = 16 << 20
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = 30 * time.Second
	}
	if opts.DrainGrace <= 0 {
		opts.DrainGrace = 30 * time.Second
	}
	if opts.Templates <= 0 {
		opts.Templates = 64
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, log: opts.Log, tasks: map[string]*task.Task{}, traces: map[string]*TraceRecord{},
		entries: map[string]*entry{}, conns: map[*wsConn]bool{}, metrics: newMetrics(),
		readSys: readProc, fdLimit: openFileLimit(), countFDs: openFiles}
	for i := range opts.Tasks {
		t := &opts.Tasks[i]
		if _, dup := s.tasks[t.InstanceID]; dup {
			return nil, fmt.Errorf("task %s is in the tasks twice", t.InstanceID)
		}
		s.tasks[t.InstanceID] = t
		// A task whose environment is missing would fail every reset:
		// say so before serving.
		if _, err := opts.Store.Resolve(t.EnvID); err != nil {
			return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
		}
	}
	for i := range opts.Traces {
		r := &opts.Traces[i]
		if _, dup := s.traces[r.ID]; dup {
			return nil, fmt.Errorf("trace %s is in the traces twice", r.ID)
		}
		s.traces[r.ID] = r
	}
	if err := s.setSplits(); err != nil {
		return nil, err
	}
	if opts.Envs != nil {
		s.envs = map[string]bool{}
		for _, ref := range opts.Envs {
			e, err := opts.Store.Resolve(ref)
			if err != nil {
				return nil, err
			}
			s.envs[e.ID] = true
		}
	}
	s.warm = newWarmer(opts.Sandboxes)
	s.tmpl = newTemplates(opts.Sandboxes, opts.Templates, opts.Limits.CommandTimeout, opts.History)
	if opts.Trajectories != "" {
		tl, err := openTrajectoryLog(opts.Trajectories)
		if err != nil {
			return nil, err
		}
		s.traj = tl
	}
	return s, nil
}

// Handler is the server's HTTP handler, for tests and for embedding;
// Serve uses it.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /schema", s.auth(s.schema))
	mux.HandleFunc("GET /metadata", s.auth(s.metadata))
	mux.HandleFunc("GET /metrics", s.auth(s.serveMetrics))
	mux.HandleFunc("GET /ws", s.authWS(s.serveWS))
	s.taskAPI(mux)
	s.nemoGym(mux)
	mux.HandleFunc("GET /v1/episodes", s.auth(s.listEpisodes))
	mux.HandleFunc("POST /v1/episodes", s.auth(s.createEpisode))
	mux.HandleFunc("GET /v1/episodes/{id}", s.auth(s.getEpisode))
	mux.HandleFunc("DELETE /v1/episodes/{id}", s.auth(s.deleteEpisode))
	mux.HandleFunc("POST /v1/episodes/{id}/step", s.auth(s.stepEpisode))
	mux.HandleFunc("POST /v1/episodes/{id}/clone", s.auth(s.cloneEpisode))
	mux.HandleFunc("POST /v1/episodes/{id}/checkpoints", s.auth(s.postCheckpoint))
	mux.HandleFunc("GET /v1/episodes/{id}/checkpoints", s.auth(s.getCheckpoints))
	mux.HandleFunc("DELETE /v1/episodes/{id}/checkpoints/{cp}", s.auth(s.deleteCheckpoint))
	mux.HandleFunc("POST /v1/episodes/{id}/checkpoints/{cp}/rollback", s.auth(s.postRollback))
	mux.HandleFunc("POST /v1/episodes/{id}/checkpoints/{cp}/branch", s.auth(s.postBranch))
	return s.logRequests(s.bodyDeadline(mux))
}

// Serve serves on ln until ctx is cancelled, then drains: no new
// episodes, in-flight steps get DrainGrace to finish, every episode and
// its sandbox is closed. It returns nil after a drain, or the error that
// stopped it serving.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 30 * time.Second,
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	s.startReaper()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	s.log.Info("serving", "addr", ln.Addr().String(), "kind", s.opts.Kind, "tasks", len(s.tasks),
		"traces", len(s.traces), "max_sessions", s.opts.MaxSessions, "idle_timeout", s.opts.IdleTimeout.String())
	select {
	case err := <-errc:
		s.Close()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.drain(hs)
	<-errc
	return nil
}

// drain stops the server as Serve's comment says.
func (s *Server) drain(hs *http.Server) {
	start := time.Now()
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	s.log.Info("draining", "grace", s.opts.DrainGrace.String())
	graceCtx, cancel := context.WithTimeout(context.Background(), s.opts.DrainGrace)
	defer cancel()
	// Shutdown stops accepting and waits for REST requests in flight;
	// hijacked WebSockets are the server's own to close.
	shut := make(chan error, 1)
	go func() { shut <- hs.Shutdown(graceCtx) }()
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-graceCtx.Done():
		s.log.Warn("drain grace passed with steps in flight; closing their episodes")
	}
	n := s.Close()
	if err := <-shut; err != nil {
		hs.Close()
	}
	s.log.Info("drained", "episodes_closed", n, "seconds", time.Since(start).Seconds())
}

// Close closes every connection and episode, the prepared tasks, the
// tracer and the trajectories file, and returns how many episodes it
// closed. It is idempotent.
func (s *Server) Close() int {
	if !s.closed.CompareAndSwap(false, true) {
		return 0
	}
	s.stopReaper()
	s.mu.Lock()
	s.draining = true
	conns := make([]*wsConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	entries := make([]*entry, 0, len(s.entries))
	for _, e := range s.entries {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.shutdown(wsGoingAway, "the server is shutting down")
	}
	// The handlers end once their reads fail; the close handshake waits
	// for a peer at most 10 s.
	connsDone := make(chan struct{})
	go func() { s.connWG.Wait(); close(connsDone) }()
	select {
	case <-connsDone:
	case <-time.After(15 * time.Second):
		s.log.Warn("some /ws connections did not end")
	}
	var wg sync.WaitGroup
	for _, e := range entries {
		wg.Add(1)
		go func() { defer wg.Done(); s.closeEntry(e, "server stopped") }()
	}
	wg.Wait()
	s.warm.close()
	s.tmpl.close()
	s.tracerMu.Lock()
	if s.pool != nil {
		s.pool.Close()
		s.pool = nil
	}
	s.tracerMu.Unlock()
	if s.traj != nil {
		s.traj.close()
	}
	return len(entries)
}

// tracerPool returns the tracer pool, starting it the first time.
func (s *Server) tracerPool(ctx context.Context) (*tracer.Pool, error) {
	s.tracerMu.Lock()
	defer s.tracerMu.Unlock()
	if s.pool != nil {
		return s.pool, nil
	}
	if s.opts.NewTracer == nil || s.closed.Load() {
		return nil, invalid("value_error", "this server traces no code: name a trace by trace_id, or give one as trace", "data", "code")
	}
	p, err := s.opts.NewTracer(ctx)
	if err != nil {
		return nil, fmt.Errorf("start the tracer: %w", err)
	}
	s.pool = p
	return p, nil
}

// Addr formats a listener address as the base URL clients use.
func Addr(ln net.Listener) string { return "http://" + ln.Addr().String() }
