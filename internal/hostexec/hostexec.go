// Package hostexec runs the few commands cwm asks of the host itself,
// outside any sandbox: git on the user's own repositories and on cwm's
// layers while they are built, apt-cache. None of them runs code from a
// repository. Each has a deadline, the whole process group is killed when
// it passes (git starts helpers of its own), and what it prints is capped.
package hostexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"cwm/internal/errkind"
)

// Cmd is one command to run on the host.
type Cmd struct {
	// Args is the program and its arguments.
	Args []string
	// Dir is the working directory ("" for cwm's own).
	Dir string
	// Env is added to cwm's environment.
	Env []string
	// Timeout bounds the run (default one minute).
	Timeout time.Duration
	// Capture is how many bytes of stdout are kept (default 64 MiB);
	// more is an error of kind errkind.Limit. Stderr keeps its last 8 KiB.
	Capture int
}

// waitDelay is how long a killed command's output pipes may stay open
// (held by a grandchild that escaped the group) before Wait gives up.
const waitDelay = 5 * time.Second

const stderrKept = 8 << 10

// Output runs c and returns its stdout. A command that exits with a status
// other than 0 is an error naming it, with the last line of its stderr; a
// command still running at the deadline is killed, process group and all,
// and is an error saying so.
func Output(ctx context.Context, c Cmd) ([]byte, error) {
	if len(c.Args) == 0 {
		return nil, errors.New("hostexec: no command")
	}
	if c.Timeout <= 0 {
		c.Timeout = time.Minute
	}
	if c.Capture <= 0 {
		c.Capture = 64 << 20
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Args[0], c.Args[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = waitDelay
	stdout := &capped{max: c.Capture}
	stderr := &tail{max: stderrKept}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	name := strings.Join(c.Args, " ")
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return nil, fmt.Errorf("%s: still running after %v: killed", name, c.Timeout)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: %w", name, ctx.Err())
	case err != nil:
		msg := lastLine(stderr.buf.Bytes())
		if msg == "" {
			msg = err.Error()
		}
		return stdout.buf.Bytes(), fmt.Errorf("%s: %s", name, msg)
	case stdout.over:
		return nil, errkind.Errorf(errkind.Limit, "%s: more than %d bytes of output", name, c.Capture)
	}
	return stdout.buf.Bytes(), nil
}

// capped keeps the first max bytes written to it.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (w *capped) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room < len(p) {
		w.over = true
		w.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return w.buf.Write(p)
}

// tail keeps the last max bytes (at least) written to it.
type tail struct {
	buf bytes.Buffer
	max int
}

func (w *tail) Write(p []byte) (int, error) {
	w.buf.Write(p)
	if n := w.buf.Len(); n > 2*w.max {
		rest := append([]byte(nil), w.buf.Bytes()[n-w.max:]...)
		w.buf.Reset()
		w.buf.Write(rest)
	}
	return len(p), nil
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
