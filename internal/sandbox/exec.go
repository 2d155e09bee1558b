package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Cmd is a command to run in a sandbox.
type Cmd struct {
	// Args is the argv; Args[0] is looked up in the sandbox's PATH.
	Args []string
	// Shell, when set instead of Args, is run with /bin/bash -c.
	Shell string
	// Stdin is the command's input; nil means /dev/null.
	Stdin io.Reader
	// Env entries (KEY=VALUE) are added to the sandbox's environment.
	Env []string
	// Dir is the working directory inside the sandbox; relative paths are
	// taken from the sandbox's workdir.
	Dir string
	// Timeout overrides the sandbox's per-command wall-clock limit.
	Timeout time.Duration
	// Grace is how long a timed-out command has between SIGTERM and SIGKILL
	// (default 100ms).
	Grace time.Duration
	// Stdout and Stderr, when set, receive the output as it is produced,
	// in addition to the captured copy in Result.
	Stdout, Stderr io.Writer
	// Capture is how many bytes of each stream Result keeps (head and tail
	// halves; default 1 MiB).
	Capture int
	// OutputLimit overrides the sandbox's limit on bytes written to stdout
	// and stderr (negative: no limit, for long-lived workers).
	OutputLimit int64
	// TTY, when set, is the terminal (a pty slave) the command uses for
	// stdin, stdout and stderr and as its controlling terminal. Output is
	// then neither captured nor limited.
	TTY *os.File
}

// Reason says which limit ended a command.
type Reason string

const (
	ReasonNone      Reason = ""
	ReasonTimeout   Reason = "timeout"
	ReasonMemory    Reason = "memory"
	ReasonPids      Reason = "pids"
	ReasonOutput    Reason = "output"
	ReasonCPU       Reason = "cpu"
	ReasonFileSize  Reason = "filesize"
	ReasonDisk      Reason = "disk"
	ReasonCancelled Reason = "cancelled"
)

// Result is how a command ended.
type Result struct {
	// ExitCode is the exit status, or -1 when a signal killed the command.
	ExitCode int
	// Signal is the signal that killed it, if one did.
	Signal syscall.Signal
	// Stdout and Stderr are the captured output (see Cmd.Capture).
	Stdout, Stderr []byte
	// StdoutBytes and StderrBytes count everything written.
	StdoutBytes, StderrBytes int64
	// Duration is the wall-clock time from start to exit.
	Duration time.Duration
	// CPU is the user plus system time of the command and its waited-for
	// children.
	CPU time.Duration
	// MaxRSS is the largest resident set of the command or a child.
	MaxRSS int64
	// Reason names the limit that ended the command, if any.
	Reason Reason
}

// Success reports whether the command exited with status 0 on its own.
func (r Result) Success() bool { return r.ExitCode == 0 && r.Reason == ReasonNone }

// Describe is a short human description of how the command ended.
func (r Result) Describe() string {
	var how string
	if r.Signal != 0 {
		how = "killed by " + unix.SignalName(r.Signal)
	} else {
		how = fmt.Sprintf("exit status %d", r.ExitCode)
	}
	if r.Reason != ReasonNone {
		how += fmt.Sprintf(" (%s limit)", r.Reason)
	}
	return how
}

// ErrEmptyCommand is returned for a Cmd with neither Args nor Shell.
var ErrEmptyCommand = errors.New("empty command")

// argv is the command line cmd runs: Args, or bash -c Shell.
func (cmd Cmd) argv() ([]string, error) {
	argv := cmd.Args
	if cmd.Shell != "" {
		argv = []string{"/bin/bash", "-c", cmd.Shell}
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, ErrEmptyCommand
	}
	return argv, nil
}

// Exec runs cmd to completion. The error is non-nil only when the command
// could not be run at all (not found, bad workdir, sandbox gone); a command
// that fails or hits a limit is a Result.
func (s *Sandbox) Exec(ctx context.Context, cmd Cmd) (Result, error) {
	p, err := s.Start(ctx, cmd)
	if err != nil {
		return Result{}, err
	}
	return p.Wait()
}

// Process is a command started with Start.
type Process struct {
	s        *Sandbox
	id       uint64
	ch       chan reply
	ctx      context.Context
	start    time.Time
	pid      int
	counters counters

	killOnce sync.Once
	killWhy  chan Reason // first reason the host asked init to kill it

	// stop, when set, kills the command instead of asking init to (a
	// one-shot sandbox has no init to ask).
	stop func()

	readers  sync.WaitGroup
	rpipes   []*os.File
	out      [2]*capture
	outMu    sync.Mutex
	written  int64
	limit    int64
	stopPids chan struct{}
}

// Pid is the command's process id inside the sandbox.
func (p *Process) Pid() int { return p.pid }

// Start starts cmd and returns without waiting for it.
func (s *Sandbox) Start(ctx context.Context, cmd Cmd) (*Process, error) {
	argv, err := cmd.argv()
	if err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, ErrDead
	}
	p := newProcess(ctx, s, cmd)
	msg := &execMsg{Argv: argv, Env: mergeEnv(s.cfg.Env, cmd.Env), Dir: s.resolve(cmd.Dir),
		Timeout: int64(s.timeout(cmd.Timeout)), Grace: int64(grace(cmd.Grace))}
	if cmd.TTY != nil {
		msg.TTY = true
		p.id, p.ch, p.pid, err = s.spawn(ctx, msg, cmd.TTY, cmd.TTY, cmd.TTY)
		if err != nil {
			return nil, err
		}
		p.start = time.Now()
		return p, nil
	}
	st, err := p.openStdio(cmd)
	if err != nil {
		return nil, err
	}
	p.counters = s.cg.counters()
	p.id, p.ch, p.pid, err = s.spawn(ctx, msg, st.cmd[0], st.cmd[1], st.cmd[2])
	st.closeCmd()
	if err != nil {
		st.closeHost(p)
		return nil, err
	}
	p.start = time.Now()
	p.startIO(cmd, st)
	return p, nil
}

// newProcess prepares the bookkeeping of cmd: its captured output and its
// output limit.
func newProcess(ctx context.Context, s *Sandbox, cmd Cmd) *Process {
	capN := cmd.Capture
	if capN <= 0 {
		capN = 1 << 20
	}
	p := &Process{s: s, ctx: ctx, killWhy: make(chan Reason, 1), limit: s.cfg.Limits.Output,
		out: [2]*capture{newCapture(capN), newCapture(capN)}}
	switch {
	case cmd.OutputLimit > 0:
		p.limit = cmd.OutputLimit
	case cmd.OutputLimit < 0:
		p.limit = math.MaxInt64
	}
	return p
}

// stdio is a command's standard descriptors and the host's ends of them.
type stdio struct {
	cmd    [3]*os.File // what the command gets as stdin, stdout and stderr
	piped  []*os.File  // those of cmd that are pipe ends the host made
	stdinW *os.File    // where cmd.Stdin is copied to, unless it is a file
}

// openStdio makes the pipes for cmd's output (p.rpipes are the read ends)
// and its stdin: /dev/null, cmd.Stdin itself if it is a file, or a pipe
// that startIO fills from it.
func (p *Process) openStdio(cmd Cmd) (*stdio, error) {
	st := &stdio{}
	st.cmd[0] = p.s.rt.devNull
	switch r := cmd.Stdin.(type) {
	case nil:
	case *os.File:
		st.cmd[0] = r
	default:
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		st.cmd[0], st.stdinW = pr, pw
		st.piped = append(st.piped, pr)
	}
	for i := 1; i <= 2; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			st.closeCmd()
			st.closeHost(p)
			return nil, err
		}
		p.rpipes = append(p.rpipes, r)
		st.cmd[i] = w
		st.piped = append(st.piped, w)
	}
	return st, nil
}

// closeCmd closes the host's copies of the command's pipe ends, once the
// command has them.
func (st *stdio) closeCmd() {
	for _, f := range st.piped {
		f.Close()
	}
	st.piped = nil
}

// closeHost closes the host's ends when the command did not start.
func (st *stdio) closeHost(p *Process) {
	for _, f := range p.rpipes {
		f.Close()
	}
	if st.stdinW != nil {
		st.stdinW.Close()
	}
}

// startIO starts feeding stdin, reading stdout and stderr, and watching
// the sandbox's process limit.
func (p *Process) startIO(cmd Cmd, st *stdio) {
	if st.stdinW != nil {
		go func() {
			io.Copy(st.stdinW, cmd.Stdin)
			st.stdinW.Close()
		}()
	}
	p.readers.Add(2)
	go p.read(0, p.rpipes[0], cmd.Stdout)
	go p.read(1, p.rpipes[1], cmd.Stderr)
	if p.s.cg != nil {
		p.stopPids = make(chan struct{})
		go p.watchPids()
	}
}

// spawn asks init to start a command with the given stdin, stdout and
// stderr. The returned channel receives the command's exit reply.
func (s *Sandbox) spawn(ctx context.Context, msg *execMsg, stdin, stdout, stderr *os.File) (uint64, chan reply, int, error) {
	id, ch, err := s.spawnSend(msg, stdin, stdout, stderr)
	if err != nil {
		return 0, nil, 0, err
	}
	pid, err := s.spawnWait(ctx, id, ch)
	if err != nil {
		return 0, nil, 0, err
	}
	return id, ch, pid, nil
}

// spawnSend is the first half of spawn: the request sent, not waited for.
func (s *Sandbox) spawnSend(msg *execMsg, stdin, stdout, stderr *os.File) (uint64, chan reply, error) {
	id, ch := s.register()
	if err := s.send(request{ID: id, Op: "exec", Exec: msg}, stdin, stdout, stderr); err != nil {
		s.unregister(id)
		return 0, nil, err
	}
	return id, ch, nil
}

// spawnWait is the second half of spawn: init's answer to spawnSend's
// request id, the command's pid.
func (s *Sandbox) spawnWait(ctx context.Context, id uint64, ch chan reply) (int, error) {
	r, err := s.wait(ctx, ch)
	if err != nil {
		s.unregister(id)
		if ctx.Err() != nil {
			// The command may have started after all: have it killed.
			s.send(request{Op: "kill", Target: id, Reason: string(ReasonCancelled)})
			return 0, ctx.Err()
		}
		return 0, err
	}
	return r.Pid, nil
}

func grace(d time.Duration) time.Duration {
	if d <= 0 {
		return 100 * time.Millisecond
	}
	return d
}

func (s *Sandbox) timeout(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return s.cfg.Limits.Timeout
}

// resolve makes a sandbox path absolute against the workdir.
func (s *Sandbox) resolve(p string) string {
	if p == "" {
		return s.cfg.Workdir
	}
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(s.cfg.Workdir, p)
}

func (p *Process) read(i int, r *os.File, live io.Writer) {
	defer p.readers.Done()
	defer r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p.outMu.Lock()
			p.out[i].Write(buf[:n])
			p.written += int64(n)
			over := p.written > p.limit
			p.outMu.Unlock()
			if live != nil {
				live.Write(buf[:n])
			}
			if over {
				p.kill(ReasonOutput)
				// Keep draining so the command is not blocked on a
				// full pipe while init kills it.
			}
		}
		if err != nil {
			return
		}
	}
}

// watchPids kills the command when the sandbox hits its process limit: a
// fork bomb does not end on its own once fork starts failing.
func (p *Process) watchPids() {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	base := p.counters.pidsMax
	for {
		select {
		case <-p.stopPids:
			return
		case <-t.C:
			if p.s.cg.pidsEvents() > base {
				p.kill(ReasonPids)
				return
			}
		}
	}
}

// kill asks init to kill the command (and all it started).
func (p *Process) kill(why Reason) {
	p.killOnce.Do(func() {
		p.killWhy <- why
		if p.stop != nil {
			p.stop()
			return
		}
		p.s.send(request{Op: "kill", Target: p.id, Reason: string(why)})
	})
}

// Kill stops the command; Wait then reports ReasonCancelled.
func (p *Process) Kill() { p.kill(ReasonCancelled) }

// Wait waits for the command to exit and its output to drain.
func (p *Process) Wait() (Result, error) {
	defer p.s.unregister(p.id)
	var r reply
	var err error
	for {
		r, err = p.s.wait(p.ctx, p.ch)
		if err == nil || !errors.Is(err, p.ctx.Err()) || p.ctx.Err() == nil {
			break
		}
		// Cancelled: have init kill it, then collect the exit as usual.
		p.kill(ReasonCancelled)
		p.ctx = context.WithoutCancel(p.ctx)
	}
	if p.stopPids != nil {
		close(p.stopPids)
	}
	if err != nil {
		for _, f := range p.rpipes {
			f.Close()
		}
		p.readers.Wait()
		return Result{}, err
	}
	info := r.Exit
	if info == nil {
		return Result{}, fmt.Errorf("sandbox: exit reply without status")
	}
	return p.finish(info), nil
}

// finish waits for the command's output to drain and builds its result.
func (p *Process) finish(info *exitInfo) Result {
	dur := time.Since(p.start)
	// Every process of the command is dead, so the pipes reach EOF
	// promptly; the timer guards against a writer that was not seen.
	done := make(chan struct{})
	go func() { p.readers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		for _, f := range p.rpipes {
			f.Close()
		}
		<-done
	}
	res := Result{
		ExitCode:    info.Code,
		Signal:      syscall.Signal(info.Signal),
		Stdout:      p.out[0].Bytes(),
		Stderr:      p.out[1].Bytes(),
		StdoutBytes: p.out[0].total,
		StderrBytes: p.out[1].total,
		Duration:    dur,
		CPU:         time.Duration(info.UserNS + info.SysNS),
		MaxRSS:      info.MaxRSS,
	}
	res.Reason = p.reason(info, res)
	return res
}

func (p *Process) reason(info *exitInfo, res Result) Reason {
	if info.TimedOut {
		return ReasonTimeout
	}
	select {
	case why := <-p.killWhy:
		return why
	default:
	}
	if info.Killed != "" {
		return Reason(info.Killed)
	}
	if res.Signal == syscall.SIGKILL || res.ExitCode != 0 {
		// Only a failed command can have been ended by the OOM killer, so a
		// clean exit skips reading the counters.
		if p.s.cg.counters().oomKills > p.counters.oomKills {
			return ReasonMemory
		}
	}
	if res.ExitCode != 0 && info.DiskFull {
		return ReasonDisk
	}
	// A shell reports a child killed by signal N as exit status 128+N.
	switch {
	case res.Signal == syscall.SIGXCPU || res.Signal == 0 && res.ExitCode == 128+int(syscall.SIGXCPU):
		return ReasonCPU
	case res.Signal == syscall.SIGXFSZ || res.Signal == 0 && res.ExitCode == 128+int(syscall.SIGXFSZ):
		return ReasonFileSize
	}
	switch res.Signal {
	case syscall.SIGKILL:
		if res.CPU >= p.s.cfg.Limits.CPU {
			return ReasonCPU
		}
	}
	return ReasonNone
}
