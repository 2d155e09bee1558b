package tracer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"cwm/internal/lazyre"
	"cwm/internal/sandbox"
	"cwm/internal/trace"
)

// Options configure a Pool. Zero fields take the defaults in parentheses.
type Options struct {
	// Workers is the number of fork servers, each in its own sandbox
	// (runtime.NumCPU()).
	Workers int
	// Timeout is the wall clock of one function, module code included (5s).
	Timeout time.Duration
	// Caps bound each trace (TraceCaps).
	Caps
	// MaxOutput caps the text of main's result in Result.Output (65536).
	MaxOutput int
	// MaxCapture is how much of the program's stdout and stderr is kept
	// (4096 characters each).
	MaxCapture int
	// Memory is the address space of one runner in bytes (1 GiB); past it
	// allocations raise MemoryError in the program.
	Memory int64
	// Recycle is how many functions a runner traces before it is replaced
	// by a fresh fork (1000); 1 forks a new runner for every function.
	Recycle int
	// Python is the interpreter inside the sandbox (/usr/bin/python3).
	Python string
	// Base is the root filesystem of the workers' sandboxes (a stored
	// base's rootfs); "" is the host's.
	Base string
	// Layers are read-only directories stacked over Base, topmost first
	// (an interpreter installed outside the base's /usr, for example).
	Layers []string
	// Log receives worker restarts; nil discards them.
	Log *slog.Logger
}

// sandboxMemory is the memory limit of a worker's sandbox: the runner's
// address space and room for the server and what the program forks.
func (o *Options) sandboxMemory() int64 { return o.Memory + 512<<20 }

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = runtime.NumCPU()
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	o.Caps = o.Caps.or(TraceCaps)
	if o.MaxOutput <= 0 {
		o.MaxOutput = 65536
	}
	if o.MaxCapture <= 0 {
		o.MaxCapture = 4096
	}
	if o.Memory <= 0 {
		o.Memory = 1 << 30
	}
	if o.Recycle <= 0 {
		o.Recycle = 1000
	}
	if o.Python == "" {
		o.Python = "/usr/bin/python3"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// Pool traces functions on a set of workers. Its methods are safe for
// concurrent use; each call occupies one worker.
type Pool struct {
	opts Options
	idle chan *worker

	mu      sync.Mutex // guards all, started and closed
	all     []*worker
	started bool // all workers were put in idle once
	closed  bool
}

// NewPool starts opts.Workers workers in sandboxes of rt and waits until
// they are ready.
func NewPool(ctx context.Context, rt *sandbox.Runtime, opts Options) (*Pool, error) {
	opts = opts.withDefaults()
	p := &Pool{opts: opts, idle: make(chan *worker, opts.Workers)}
	errs := make(chan error, opts.Workers)
	for i := 0; i < opts.Workers; i++ {
		w := &worker{rt: rt, opts: &p.opts}
		p.all = append(p.all, w)
		go func() { errs <- w.start(ctx) }()
	}
	var first error
	for range p.all {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		p.Close()
		return nil, first
	}
	for _, w := range p.all {
		p.idle <- w
	}
	p.started = true
	return p, nil
}

// Options returns the pool's options with defaults filled in.
func (p *Pool) Options() Options { return p.opts }

// Trace traces one function. Problems of the function are reported in the
// Result (status and reason); only a cancelled ctx makes Trace return
// early, with status error.
func (p *Pool) Trace(ctx context.Context, f Func) Result {
	return p.trace(ctx, f, false)
}

// trace is Trace; with stopAtCap, a trace that hits a cap ends there as
// too_long, its program not run on untraced: what Fuzz needs, since it
// keeps only complete traces.
func (p *Pool) trace(ctx context.Context, f Func, stopAtCap bool) Result {
	src := Context(f.Code, f.Call)
	if len(src) > p.opts.MaxBytes-textOverhead {
		return tooLongContext(f.ID, src, &p.opts)
	}
	if why := unrepresentable(f.Code); why != "" {
		return Result{ID: f.ID, Status: Error, Context: src, Error: why}
	}
	req := p.request(f.ID, src)
	req.StopAtCap = stopAtCap
	return p.result(ctx, req, nil)
}

// request is a trace request of src with the pool's caps.
func (p *Pool) request(id, src string) *request {
	return &request{ID: id, Source: src, Filename: Filename, Timeout: p.opts.Timeout.Seconds(),
		MaxEvents: p.opts.MaxEvents, MaxBytes: p.opts.MaxBytes, MaxRepr: p.opts.MaxRepr,
		MaxOutput: p.opts.MaxOutput, MaxCapture: p.opts.MaxCapture}
}

// result runs req on a worker and builds its Result; adjust, when set,
// sees the frames and the response line before the text is made (a whole
// program's trace, prog.go).
func (p *Pool) result(ctx context.Context, req *request, adjust func(res *Result, line []byte)) Result {
	src := req.Source
	line, oom, err := p.do(ctx, req)
	switch {
	case errors.Is(err, errMemory):
		return Result{ID: req.ID, Status: Memory, Context: src, Error: err.Error()}
	case err != nil:
		return Result{ID: req.ID, Status: Error, Context: src, Error: err.Error()}
	}
	var resp response
	if err := json.Unmarshal(line, &resp); err != nil {
		return Result{ID: req.ID, Status: Error, Context: src,
			Error: fmt.Sprintf("unreadable worker response (a cwm bug): %v", err)}
	}
	resp.ID = req.ID
	res, err := buildFrames(src, &resp)
	if err == nil {
		if adjust != nil {
			adjust(&res, line)
		}
		res = finish(res, limits{maxBytes: p.opts.MaxBytes})
	}
	// A process of the function was OOM-killed, and the function did not
	// finish (a runner killed, or left waiting for a killed child until
	// the wall clock ran out): it ran out of memory, whatever the server
	// could see. A trace that ended on its own stands.
	if oom && (res.Status == Timeout || res.Status == Error) {
		res.Status = Memory
		res.Error = fmt.Sprintf("%s: the sandbox's memory limit of %d MiB was reached and its OOM killer ended a process of the function (as the server saw it: %s)",
			errMemory, p.opts.sandboxMemory()>>20, res.Error)
	}
	return res
}

var definesMain = lazyre.New(`(?m)^(async\s+)?def\s+main\s*\(|^main\s*=`)

// Unrepresentable says why code cannot be traced (nor run by a Pool) in
// CWM's frame, or "": it holds one of the format's special tokens, or
// defines main, the entry point's name.
func Unrepresentable(code string) string { return unrepresentable(code) }

func unrepresentable(code string) string {
	if tok := trace.SpecialToken(code); tok != "" {
		return fmt.Sprintf("the code contains the special token %s, which the trace text cannot carry in its context", tok)
	}
	if definesMain().MatchString(code) {
		return "the code defines main, the name of the trace's entry point; rename it"
	}
	return ""
}

// Mutation is a mutated call: the call expression and its argument text.
type Mutation struct {
	Call  string `json:"call"`
	Input string `json:"input"`
}

// ErrNotMutable is returned by Mutate for calls whose arguments are not
// all literals.
var ErrNotMutable = errors.New("call arguments cannot be mutated")

// Mutate returns up to n distinct type-preserving mutations of the
// arguments of call (see mutate.py), deterministic for a seed. code, the
// function's source, lends its constants to the mutations.
func (p *Pool) Mutate(ctx context.Context, code, call string, seed int64, n int) ([]Mutation, error) {
	line, _, err := p.do(ctx, &request{Op: "mutate", Code: code, Call: call, Seed: seed, N: n, Timeout: p.opts.Timeout.Seconds()})
	if err != nil {
		return nil, err
	}
	var resp response
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, fmt.Errorf("unreadable mutate response: %w", err)
	}
	if resp.Error != "" {
		return nil, fmt.Errorf("%w: %s", ErrNotMutable, resp.Error)
	}
	return resp.Calls, nil
}

// do runs one request on an idle worker. A worker that could not be
// (re)started is tried once more; a request that reached its worker and
// killed it is not retried (it would kill the next one too): its error is
// returned, and the worker restarts on its next request. oom is worker.do's.
func (p *Pool) do(ctx context.Context, req *request) (line []byte, oom bool, err error) {
	var w *worker
	select {
	case w = <-p.idle:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	defer func() { p.idle <- w }()
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, false, errors.New("trace pool is closed")
	}
	// The server kills a runner at Timeout + 1s + Timeout/5; the margin
	// beyond covers serialising a large result and a fresh fork.
	wait := p.opts.Timeout*2 + 30*time.Second
	line, sent, oom, err := w.do(ctx, req, wait)
	if err != nil && ctx.Err() == nil {
		p.opts.Log.Warn("trace worker failed", "id", req.ID, "err", err)
		if !sent {
			line, _, oom, err = w.do(ctx, req, wait)
		}
	}
	return line, oom, err
}

// Close stops every worker and its sandbox.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	started := p.started
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range p.all {
		if started {
			// Wait for calls in flight to hand their worker back.
			w = <-p.idle
		}
		wg.Add(1)
		go func() { defer wg.Done(); w.close() }()
	}
	wg.Wait()
	return nil
}
