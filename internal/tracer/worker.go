package tracer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"cwm/internal/sandbox"
	"cwm/internal/testrun"
)

// worker is one fork server in its own sandbox. It serves one request at a
// time; the pool hands it to one caller at a time.
type worker struct {
	rt   *sandbox.Runtime
	opts *Options

	sb    *sandbox.Sandbox
	proc  *sandbox.Process
	stdin *os.File
	lines chan []byte    // response lines; closed when the server's stdout ends
	exit  chan exitState // receives once the server has exited
	gen   int            // how many times the server was started
}

type exitState struct {
	res sandbox.Result
	err error
}

// errWorker is a failure of the worker itself, not of the traced function.
var errWorker = errors.New("trace worker failed")

// errMemory is the worker's death by its sandbox's memory limit: the
// memory cgroup's OOM killer ended the server.
var errMemory = errors.New("the trace worker ran out of memory")

// start creates the sandbox (if needed), starts the server and waits for
// its ready line. ctx bounds the start only: the sandbox kills a process
// when the context it was started with ends, and the server must outlive
// the call that happened to (re)start it; Pool.Close ends it.
func (w *worker) start(ctx context.Context) (err error) {
	life := context.WithoutCancel(ctx)
	if w.sb == nil {
		w.sb, err = w.rt.New(life, sandbox.Config{Base: w.opts.Base, Layers: w.opts.Layers, Workdir: "/tmp", Env: workerEnv, Limits: sandbox.Limits{
			Memory: w.opts.sandboxMemory(),
			Pids:   512,
			// Runners live for many functions; the wall clock per function
			// is the limit that matters, so CPU time is not capped here.
			CPU:     1000 * time.Hour,
			Timeout: 1000 * time.Hour,
		}})
		if err != nil {
			return fmt.Errorf("start trace worker sandbox: %w", err)
		}
		if err := installPy(ctx, w.sb); err != nil {
			return err
		}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer pr.Close()
	outR, outW := io.Pipe()
	args := []string{w.opts.Python, "-s", pyDir + "/_cwm_server.py", "serve",
		strconv.Itoa(w.opts.Recycle), strconv.FormatInt(w.opts.Memory, 10)}
	p, err := w.sb.Start(life, sandbox.Cmd{Args: args, Stdin: pr, Stdout: outW,
		Capture: 8 << 10, OutputLimit: -1, Timeout: 1000 * time.Hour})
	if err != nil {
		pw.Close()
		return fmt.Errorf("start trace worker: %w", err)
	}
	w.proc, w.stdin, w.gen = p, pw, w.gen+1
	w.lines, w.exit = make(chan []byte, 1), make(chan exitState, 1)
	go func() {
		res, err := p.Wait()
		outW.Close()
		w.exit <- exitState{res, err}
	}()
	go readLines(outR, w.lines)
	select {
	case line, ok := <-w.lines:
		var hello struct {
			Ready bool `json:"ready"`
			Hash  int  `json:"hash_randomization"`
		}
		if ok && json.Unmarshal(line, &hello) == nil && hello.Ready {
			if hello.Hash != 0 {
				w.stop()
				return fmt.Errorf("%w: hash randomization is on in the worker; traces would not be deterministic", errWorker)
			}
			return nil
		}
		return fmt.Errorf("%w: %s", errWorker, w.stop())
	case <-time.After(60 * time.Second):
		return fmt.Errorf("%w: no ready line within 60s: %s", errWorker, w.stop())
	case <-ctx.Done():
		w.stop()
		return ctx.Err()
	}
}

// workerEnv is the environment of the Python processes: a fixed hash seed
// makes set and dict iteration of strings deterministic.
var workerEnv = []string{"PYTHONHASHSEED=0", "PYTHONDONTWRITEBYTECODE=1", "PYTHONIOENCODING=utf-8"}

// installPy writes the tracer's Python files into pyDir of sb.
func installPy(ctx context.Context, sb *sandbox.Sandbox) error {
	r, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"mkdir", "-p", pyDir}, Capture: 4096})
	if err != nil || !r.Success() {
		return fmt.Errorf("create %s in the trace worker sandbox: %v %s", pyDir, err, r.Stderr)
	}
	files := map[string][]byte{testrun.PertestModule + ".py": testrun.PertestPy}
	for name, dst := range pyNames {
		files[dst], _ = pyFiles.ReadFile(name)
	}
	for dst, data := range files {
		if err := sb.WriteFile(ctx, pyDir+"/"+dst, data, 0o644); err != nil {
			return fmt.Errorf("write %s into the trace worker sandbox: %w", dst, err)
		}
	}
	return nil
}

// readLines sends each line of r (without its newline) to ch, then closes it.
func readLines(r io.Reader, ch chan<- []byte) {
	defer close(ch)
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			ch <- line[:len(line)-1]
		}
		if err != nil {
			io.Copy(io.Discard, br)
			return
		}
	}
}

// do sends one request and returns the response line; sent reports
// whether the request reached the server. wait bounds the whole exchange;
// past it the server is considered hung. Any error means the server is gone
// (stopped here if it was not already) and is restarted by the next do; it
// wraps errMemory when the sandbox's memory limit ended the server.
//
// oom reports that the sandbox's memory cgroup OOM-killed a process while
// the request ran (a runner, or a process the program forked), which the
// server cannot see: only the sandbox can. So when the sandbox's count of
// OOM kills moved during the request, the server is made to exit with a
// failure status and the sandbox's verdict on it read; the next do starts
// a fresh one. OOM kills elsewhere on the machine (another sandbox, another
// cwm) leave the worker alone.
func (w *worker) do(ctx context.Context, req *request, wait time.Duration) (line []byte, sent, oom bool, err error) {
	if w.proc == nil {
		if err := w.start(ctx); err != nil {
			return nil, false, false, err
		}
	}
	kills := w.sb.OOMKills()
	line, sent, err = w.exchange(ctx, req, wait)
	if err == nil && w.sb.OOMKills() != kills {
		oom = w.exitChecked()
	}
	return line, sent, oom, err
}

// exchange sends req and waits for its response line.
func (w *worker) exchange(ctx context.Context, req *request, wait time.Duration) (line []byte, sent bool, err error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, false, err
	}
	// A server that stopped reading would block the write forever.
	w.stdin.SetWriteDeadline(time.Now().Add(wait))
	if _, err := w.stdin.Write(append(b, '\n')); err != nil {
		return nil, false, fmt.Errorf("%w: send request: %s", errWorker, w.stop())
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case line, ok := <-w.lines:
		if !ok {
			st := w.halt()
			if st.err == nil && st.res.Reason == sandbox.ReasonMemory {
				return nil, true, fmt.Errorf("%w (the sandbox's limit is %d MiB): %s", errMemory, w.opts.sandboxMemory()>>20, describeExit(st))
			}
			return nil, true, fmt.Errorf("%w: %s", errWorker, describeExit(st))
		}
		return line, true, nil
	case <-timer.C:
		return nil, true, fmt.Errorf("%w: no answer within %v: %s", errWorker, wait, w.stop())
	case <-ctx.Done():
		w.stop()
		return nil, true, ctx.Err()
	}
}

// stop kills the server and returns how it ended, for error messages. The
// sandbox is dropped too: the next start gets a clean one.
func (w *worker) stop() string {
	if w.proc == nil {
		return "not running"
	}
	return describeExit(w.halt())
}

// halt is stop returning how the server ended.
func (w *worker) halt() exitState {
	w.stdin.Close()
	w.proc.Kill()
	var st exitState
	select {
	case st = <-w.exit:
	case <-time.After(10 * time.Second):
		st.err = errors.New("did not exit after kill")
	}
	for range w.lines {
	}
	w.proc = nil
	w.close()
	return st
}

// exitChecked asks the server to exit with a failure status, which makes
// the sandbox check its memory cgroup's OOM kills since the server
// started, and reports whether there were any. The sandbox is dropped (a
// process the program left may still hold memory); the next do starts
// afresh.
func (w *worker) exitChecked() bool {
	w.stdin.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := w.stdin.Write([]byte(`{"op": "exit", "code": 3}` + "\n")); err == nil {
		select {
		case st := <-w.exit:
			for range w.lines {
			}
			w.proc = nil
			w.close()
			return st.err == nil && st.res.Reason == sandbox.ReasonMemory
		case <-time.After(10 * time.Second):
		}
	}
	st := w.halt()
	return st.err == nil && st.res.Reason == sandbox.ReasonMemory
}

func describeExit(st exitState) string {
	if st.err != nil {
		return st.err.Error()
	}
	how := "worker " + st.res.Describe()
	if msg := strings.TrimSpace(string(st.res.Stderr)); msg != "" {
		if len(msg) > 2000 {
			msg = "..." + msg[len(msg)-2000:]
		}
		how += ": " + msg
	}
	return how
}

// close releases the sandbox.
func (w *worker) close() {
	if w.proc != nil {
		w.stdin.Close() // EOF: the server exits on its own
		select {
		case <-w.exit:
		case <-time.After(5 * time.Second):
			w.proc.Kill()
			<-w.exit
		}
		w.proc = nil
	}
	if w.sb != nil {
		w.sb.Close()
		w.sb = nil
	}
}
