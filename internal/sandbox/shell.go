package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// CWM's bash tool tells the model these when its session had to be
// restarted (CWM-SPEC 2.2).
const (
	MsgTimeout    = "The current session has terminated due to timeout. A fresh session has started with the current working directory reset to default."
	MsgExited     = "The current session has terminated unexpectedly. A fresh session has started with the current working directory reset to default."
	MsgTooMuchOut = "The current session has terminated because your previous command produced too much output. A fresh session has started with the current working directory reset to default."
)

// ShellOptions configure a shell session.
type ShellOptions struct {
	// Timeout is the default limit of one Run (default: the sandbox's
	// command timeout).
	Timeout time.Duration
	// MaxOutput is how much one Run may print before the session is
	// restarted (default 480,000 bytes, as CWM's bash tool).
	MaxOutput int
	// Dir is where the session starts (default: the sandbox's workdir).
	Dir string
	// Env entries are added to the sandbox's environment.
	Env []string
}

// ShellResult is the outcome of one command in a shell session.
type ShellResult struct {
	// Output is stdout and stderr, merged as the command wrote them.
	Output string
	// ExitCode is the command's status ($?); -1 if the session ended.
	ExitCode int
	// Restarted is set when the session had to be restarted; Reason says
	// why (timeout, output, or "exited") and Message is CWM's text for it.
	Restarted bool
	Reason    Reason
	Message   string
	Duration  time.Duration
}

// ReasonExited means a shell session ended by itself (exit, a crash).
const ReasonExited Reason = "exited"

// Shell is a persistent non-interactive bash session: the working directory,
// variables and functions persist between commands. One command runs at a
// time.
type Shell struct {
	s    *Sandbox
	opts ShellOptions

	mu     sync.Mutex
	id     uint64
	ch     chan reply
	in     *os.File
	chunks chan []byte
	marker []byte
	buf    []byte
}

// Shell starts a bash session in the sandbox.
func (s *Sandbox) Shell(ctx context.Context, opts ShellOptions) (*Shell, error) {
	sh := s.newShell(opts)
	if err := sh.start(ctx); err != nil {
		return nil, err
	}
	return sh, nil
}

// newShell is a session of s that has not started: send and started
// start it.
func (s *Sandbox) newShell(opts ShellOptions) *Shell {
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = 480_000
	}
	if opts.Timeout <= 0 {
		opts.Timeout = s.cfg.Limits.Timeout
	}
	return &Shell{s: s, opts: opts}
}

func (sh *Shell) start(ctx context.Context) error {
	if err := sh.send(); err != nil {
		return err
	}
	return sh.started(ctx)
}

// send asks init to start bash, without waiting for its answer (started):
// what Run writes before bash runs waits in the pipe.
func (sh *Shell) send() error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start shell: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return fmt.Errorf("start shell: %w", err)
	}
	msg := &execMsg{Argv: []string{"/bin/bash", "--noprofile", "--norc"},
		Env: mergeEnv(sh.s.cfg.Env, sh.opts.Env), Dir: sh.s.resolve(sh.opts.Dir)}
	id, ch, err := sh.s.spawnSend(msg, inR, outW, outW)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return fmt.Errorf("start shell: %w", err)
	}
	sh.id, sh.ch, sh.in = id, ch, inW
	sh.marker = []byte("\x1e__CWM_" + randomHex(8) + "__")
	sh.chunks = make(chan []byte, 64)
	sh.buf = sh.buf[:0]
	go readChunks(outR, sh.chunks)
	return nil
}

// started waits for init's answer to send. A session that did not start
// is left ended.
func (sh *Shell) started(ctx context.Context) error {
	if _, err := sh.s.spawnWait(ctx, sh.id, sh.ch); err != nil {
		sh.abandon()
		return fmt.Errorf("start shell: %w", err)
	}
	return nil
}

// abandon ends a session sent but not to be used, without waiting: its
// reader goes on until init and bash, if it started, have let go of the
// pipe (bash killed, init dead, or the start failed).
func (sh *Shell) abandon() {
	sh.s.unregister(sh.id)
	sh.in.Close()
	sh.in = nil
	go func(chunks chan []byte) {
		for range chunks {
		}
	}(sh.chunks)
}

// readChunks forwards what r yields until EOF, then closes out.
func readChunks(r *os.File, out chan<- []byte) {
	defer close(out)
	defer r.Close()
	for {
		b := make([]byte, 32<<10)
		n, err := r.Read(b)
		if n > 0 {
			out <- b[:n]
		}
		if err != nil {
			return
		}
	}
}

// stop kills the session and everything it started.
func (sh *Shell) stop() {
	if sh.in == nil {
		return
	}
	sh.in.Close()
	sh.in = nil
	sh.s.send(request{Op: "kill", Target: sh.id, Reason: "restart"})
	// Wait for the exit so that the next session never races the old one.
	select {
	case <-sh.ch:
	case <-sh.s.dead:
	case <-time.After(5 * time.Second):
	}
	sh.s.unregister(sh.id)
	for range sh.chunks {
	}
}

// Close ends the session.
func (sh *Shell) Close() error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.stop()
	return nil
}

// Run runs one command (any bash text: pipelines, several lines, cd,
// export) with stdin from /dev/null. timeout 0 means the session's default.
// When the command times out, prints more than MaxOutput or ends the
// session, the session is restarted in its starting directory and the
// result says so with CWM's message.
func (sh *Shell) Run(ctx context.Context, command string, timeout time.Duration) (ShellResult, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if timeout <= 0 {
		timeout = sh.opts.Timeout
	}
	if sh.in == nil {
		if err := sh.start(ctx); err != nil {
			return ShellResult{}, err
		}
	}
	start := time.Now()
	script := "eval " + bashQuote(command) + " </dev/null\nprintf '\\036__CWM_" +
		string(sh.marker[7:len(sh.marker)-2]) + "__%d\\n' $?\n"
	if _, err := sh.in.WriteString(script); err != nil {
		return sh.restart(ctx, ReasonExited, start)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		if i := bytes.Index(sh.buf, sh.marker); i >= 0 {
			rest := sh.buf[i+len(sh.marker):]
			if j := bytes.IndexByte(rest, '\n'); j >= 0 {
				code, _ := strconv.Atoi(string(rest[:j]))
				out := string(sh.buf[:i])
				sh.buf = append(sh.buf[:0], rest[j+1:]...)
				return ShellResult{Output: out, ExitCode: code, Duration: time.Since(start)}, nil
			}
		}
		if len(sh.buf) > sh.opts.MaxOutput+len(sh.marker)+16 {
			return sh.restart(ctx, ReasonOutput, start)
		}
		select {
		case b, ok := <-sh.chunks:
			if !ok {
				return sh.restart(ctx, ReasonExited, start)
			}
			sh.buf = append(sh.buf, b...)
		case <-timer.C:
			return sh.restart(ctx, ReasonTimeout, start)
		case <-ctx.Done():
			sh.stop()
			return ShellResult{}, ctx.Err()
		case <-sh.s.dead:
			return ShellResult{}, ErrDead
		}
	}
}

// Queue writes command to the session without waiting for it: bash runs
// it before the next Run's command, with stdin from /dev/null, its output
// discarded and $? 0 after it. A session restarted before then never runs it.
// It is for builtins that set up state (cd, export), whose round trip the
// caller would rather not wait for.
func (sh *Shell) Queue(command string) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.in == nil {
		return errors.New("queue shell command: the session has ended")
	}
	if _, err := sh.in.WriteString("{ eval " + bashQuote(command) + "; } </dev/null >/dev/null 2>&1; builtin true\n"); err != nil {
		return fmt.Errorf("queue shell command: %w", err)
	}
	return nil
}

func (sh *Shell) restart(ctx context.Context, why Reason, start time.Time) (ShellResult, error) {
	out := sh.buf
	if len(out) > sh.opts.MaxOutput {
		out = out[:sh.opts.MaxOutput]
	}
	res := ShellResult{Output: string(out), ExitCode: -1, Restarted: true, Reason: why}
	switch why {
	case ReasonTimeout:
		res.Message = MsgTimeout
	case ReasonOutput:
		res.Message = MsgTooMuchOut
	default:
		res.Message = MsgExited
	}
	sh.stop()
	if err := sh.start(ctx); err != nil {
		if errors.Is(err, ErrDead) {
			return res, err
		}
		return res, fmt.Errorf("restart shell: %w", err)
	}
	res.Duration = time.Since(start)
	return res, nil
}

// bashQuote quotes s as a bash $'...' string: every byte survives, and
// nothing in s can end the quoting.
func bashQuote(s string) string {
	var b bytes.Buffer
	b.Grow(len(s) + 8)
	b.WriteString("$'")
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' || c == '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == 0:
			// bash strings cannot hold NUL; drop it as bash would.
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}
