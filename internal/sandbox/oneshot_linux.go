package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Run runs one command in a sandbox of its own and removes the sandbox: the
// same namespaces, filesystem, limits and result as New, Exec and Close,
// without a sandbox init process. A child cloned with the calling
// process's memory (so nothing is copied) builds the sandbox with the plan
// init would run, starts the command and, as the sandbox's pid 1, waits for
// it; when it exits the kernel ends everything else in the sandbox.
// Starting no second Go program is what makes a one-off command cheap
// (`cwm sandbox run`).
//
// Because pid 1 shares this process's memory, it must not be ptraceable
// from inside the sandbox; the kernel keeps that flag per memory, so the
// first Run makes the calling process non-dumpable for good. That needs
// root: without it (unprivileged user namespaces could then not be set up
// by the parent any more), and for a command with a TTY, Run takes the New
// path.
func (rt *Runtime) Run(ctx context.Context, cfg Config, cmd Cmd) (Result, error) {
	if cmd.TTY != nil || rt.uid != 0 || !oneShotSupported {
		s, err := rt.New(ctx, cfg)
		if err != nil {
			return Result{}, err
		}
		defer s.Close()
		return s.Exec(ctx, cmd)
	}
	argv, err := cmd.argv()
	if err != nil {
		return Result{}, err
	}
	if cfg, err = rt.check(cfg); err != nil {
		return Result{}, err
	}
	s := &Sandbox{rt: rt, id: randomID(), cfg: cfg, dead: make(chan struct{})}
	if err := rt.adopt(s); err != nil {
		return Result{}, err
	}
	var o *oneShot
	defer func() {
		rt.mu.Lock()
		delete(rt.live, s)
		rt.mu.Unlock()
		s.destroy() // kills pid 1 if it still runs, and waits for it
		if o != nil {
			o.close()
		}
	}()
	setup, err := s.prepare("", nil)
	if err != nil {
		return Result{}, err
	}
	if o, err = newOneShot(ctx, s, setup, cmd, argv); err != nil {
		return Result{}, err
	}
	return o.run(ctx, cmd)
}

// oneShot is a command running in a sandbox built by its forked pid 1.
type oneShot struct {
	s     *Sandbox
	p     *Process
	args  childArgs
	setup *plan
	cmd   *plan
	argv  []string
	keep  []any // what childArgs points to

	syncW, report *os.File
	files         []*os.File // the child's, closed after the fork
	stdio         *stdio
	stack         []byte // unmapped once pid 1 is gone
}

// childArgs is everything the forked child needs, prepared beforehand: it
// may only read memory and make system calls.
type childArgs struct {
	flags          uintptr
	syncR, reportW uintptr
	stdio          [3]uintptr
	setup, cmd     []step
	stack          uintptr   // childStack bytes outside Go's heap
	sigdfl         [4]uint64 // a struct sigaction for SIG_DFL
	sigset         uint64    // an empty signal set
	paths          []uintptr // candidate paths of the command, NUL-terminated
	argv, envv     uintptr   // NULL-terminated arrays
	report         [8]uint64
	rusage         unix.Rusage
	status         uint32
	syncByte       [1]byte
}

// Kinds of report the child sends on its report pipe.
const (
	reportExit  = 1 // the command exited: status and rusage
	reportSetup = 2 // a set-up step failed: index and errno
	reportCmd   = 3 // a step before exec failed: index and errno
	reportExec  = 4 // exec failed: index of the path and errno
	reportFork  = 5 // pid 1 could not fork the command
)

func newOneShot(ctx context.Context, s *Sandbox, setup *setupMsg, cmd Cmd, argv []string) (_ *oneShot, err error) {
	o := &oneShot{s: s, argv: argv, p: newProcess(ctx, s, cmd)}
	defer func() {
		if err != nil {
			o.close()
		}
	}()
	syncR, syncW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	o.syncW = syncW
	o.files = append(o.files, syncR)
	report, reportW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	o.report = report
	o.files = append(o.files, reportW)
	if o.stdio, err = o.p.openStdio(cmd); err != nil {
		return nil, err
	}
	// The child's copies are numbered above 2 so that moving them to 0, 1
	// and 2 cannot overwrite one another.
	for i, f := range o.stdio.cmd {
		fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 10)
		if err != nil {
			return nil, err
		}
		o.files = append(o.files, os.NewFile(uintptr(fd), "stdio"))
		o.args.stdio[i] = uintptr(fd)
	}
	env := mergeEnv(s.cfg.Env, cmd.Env)
	dir := s.resolve(cmd.Dir)
	c := &plan{}
	for i, fd := range o.args.stdio {
		c.call("set up standard descriptors", unix.SYS_DUP3, fd, uintptr(i), 0)
	}
	c.dropCaps()
	c.call("enter the sandbox's root", unix.SYS_CHROOT, c.str("/root"))
	c.call("workdir "+dir, unix.SYS_CHDIR, c.str(dir))
	c.call("new process group", unix.SYS_SETPGID, 0, 0)
	// Descriptors cwm inherited without close-on-exec stay out.
	c.add("close inherited descriptors", step{trap: unix.SYS_CLOSE_RANGE, args: [6]uintptr{3, ^uintptr(0) >> 32, unix.CLOSE_RANGE_CLOEXEC}, ignore: true})
	o.cmd = c
	for _, p := range commandPaths(argv[0], env, dir) {
		o.args.paths = append(o.args.paths, c.str(p))
	}
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return nil, err
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return nil, err
	}
	o.keep = append(o.keep, argvp, envp)
	o.args.argv = uintptr(unsafe.Pointer(&argvp[0]))
	o.args.envv = uintptr(unsafe.Pointer(&envp[0]))
	o.args.syncR, o.args.reportW = syncR.Fd(), reportW.Fd()
	o.setup = o.prologue()
	o.setup.append(setupPlan(setup))
	o.setup.append(overlayPlan(setup, "/state"))
	o.args.setup, o.args.cmd = o.setup.steps, c.steps
	stack, err := unix.Mmap(-1, 0, childStack, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("child stack: %w", err)
	}
	o.stack = stack
	o.args.stack = uintptr(unsafe.Pointer(&stack[0]))

	o.args.flags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
		syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWNET | uintptr(syscall.SIGCHLD)
	return o, nil
}

// prologue is what pid 1 does first. It closes every descriptor but its
// own: it shares no descriptor table with cwm but starts with a copy of it,
// and as it never execs, close-on-exec would not drop the copies (another
// command's pipe would then not reach EOF while this sandbox lives). Then
// it resets every signal handler, which are cwm's, and unblocks signals.
func (o *oneShot) prologue() *plan {
	p := &plan{}
	keep := []uintptr{o.args.syncR, o.args.reportW, o.args.stdio[0], o.args.stdio[1], o.args.stdio[2]}
	slices.Sort(keep)
	lo := uintptr(0)
	for _, fd := range keep {
		if fd > lo {
			p.call("close cwm's descriptors", unix.SYS_CLOSE_RANGE, lo, fd-1, 0)
		}
		lo = fd + 1
	}
	p.call("close cwm's descriptors", unix.SYS_CLOSE_RANGE, lo, 1<<32-1, 0)
	for sig := 1; sig <= 64; sig++ {
		if sig != int(syscall.SIGKILL) && sig != int(syscall.SIGSTOP) {
			p.add("reset signal handlers", step{trap: unix.SYS_RT_SIGACTION,
				args: [6]uintptr{uintptr(sig), uintptr(unsafe.Pointer(&o.args.sigdfl)), 0, 8}, ignore: true})
		}
	}
	p.call("unblock signals", unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&o.args.sigset)), 0, 8)
	return p
}

func (o *oneShot) close() {
	if o.stack != nil {
		unix.Munmap(o.stack)
		o.stack = nil
	}
	for _, f := range o.files {
		f.Close()
	}
	o.files = nil
	if o.syncW != nil {
		o.syncW.Close()
	}
	if o.report != nil {
		o.report.Close()
	}
	if o.stdio != nil {
		o.stdio.closeCmd()
		o.stdio.closeHost(o.p)
	}
}

func (o *oneShot) run(ctx context.Context, cmd Cmd) (Result, error) {
	s, p := o.s, o.p
	// Not dumpable: commands cannot ptrace pid 1 or open /proc/1/mem, which
	// would be this process's memory.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return Result{}, fmt.Errorf("set non-dumpable: %w", err)
	}
	pid, errno := forkChild(&o.args)
	if errno != 0 {
		return Result{}, fmt.Errorf("start sandbox: %w", explainStartErr(errno))
	}
	// From here the sandbox exists: destroy (deferred by Run) kills pid 1,
	// which takes every other process of the sandbox with it.
	proc, _ := os.FindProcess(pid)
	s.init = &exec.Cmd{Process: proc}
	go func() {
		proc.Wait()
		close(s.dead)
	}()
	p.stop = func() { proc.Kill() }
	for _, f := range o.files {
		f.Close()
	}
	o.files = nil
	if err := o.writeIDMaps(pid); err != nil {
		return Result{}, err
	}
	if _, err := o.syncW.Write([]byte{1}); err != nil {
		return Result{}, fmt.Errorf("start sandbox: %w", err)
	}
	if err := s.enter(pid); err != nil {
		return Result{}, err
	}
	p.counters = s.cg.counters()
	// The second byte lets pid 1 start the command: it is in the cgroup.
	if _, err := o.syncW.Write([]byte{1}); err != nil {
		return Result{}, fmt.Errorf("start sandbox: %w", err)
	}
	p.start = time.Now()
	o.stdio.closeCmd()
	p.startIO(cmd, o.stdio)
	if p.stopPids != nil {
		defer close(p.stopPids)
	}
	reports := make(chan [8]uint64, 4)
	go func() {
		defer close(reports)
		var b [64]byte
		for {
			if _, err := io.ReadFull(o.report, b[:]); err != nil {
				return
			}
			reports <- *(*[8]uint64)(unsafe.Pointer(&b))
		}
	}()
	return o.wait(ctx, cmd, reports)
}

// wait follows the command until pid 1 is gone and returns its result.
func (o *oneShot) wait(ctx context.Context, cmd Cmd, reports <-chan [8]uint64) (Result, error) {
	s, p := o.s, o.p
	timeout := time.NewTimer(s.timeout(cmd.Timeout))
	defer timeout.Stop()
	// Unless pid 1 reports an exit, it was killed, and the command with it.
	info := &exitInfo{Code: -1, Signal: int(syscall.SIGKILL)}
	var graceC <-chan time.Time
	ctxDone := ctx.Done()
	for {
		select {
		case r, ok := <-reports:
			if !ok {
				<-s.dead
				return p.finish(info), nil
			}
			if err := o.reportErr(r); err != nil {
				return Result{}, err
			}
			info.setExit(syscall.WaitStatus(r[1]), int64(r[2]), int64(r[3]), int64(r[4]))
		case <-timeout.C:
			info.TimedOut = true
			// SIGTERM to the command's process group, as Exec does; what
			// is left after the grace period dies with pid 1.
			if pgid := o.commandPid(); pgid > 0 {
				syscall.Kill(-pgid, syscall.SIGTERM)
				graceC = time.After(grace(cmd.Grace))
			} else {
				p.stop()
			}
		case <-graceC:
			p.stop()
		case <-ctxDone:
			ctxDone = nil
			p.kill(ReasonCancelled)
		}
	}
}

// reportErr turns a report of a failure to start the command into the
// error Exec would return for it.
func (o *oneShot) reportErr(r [8]uint64) error {
	i, errno := int(r[1]), syscall.Errno(r[2])
	switch r[0] {
	case reportSetup:
		return fmt.Errorf("set up sandbox: %s: %w", o.setup.what[i], errno)
	case reportCmd:
		return fmt.Errorf("%s: %w", o.cmd.what[i], errno)
	case reportFork:
		return fmt.Errorf("start %s: %w", o.argv[0], errno)
	case reportExec:
		if i == len(o.args.paths) && !strings.Contains(o.argv[0], "/") {
			return fmt.Errorf("%s: command not found", o.argv[0])
		}
		return fmt.Errorf("start %s: %w", o.argv[0], errno)
	}
	return nil
}

// commandPid is the host pid of the command (pid 1's child), 0 if it has
// none.
func (o *oneShot) commandPid() int {
	pid := o.s.init.Process.Pid
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}

// writeIDMaps maps the sandbox's users as New does (see idMap).
func (o *oneShot) writeIDMaps(pid int) error {
	rt := o.s.rt
	dir := fmt.Sprintf("/proc/%d/", pid)
	if rt.uid != 0 {
		if err := os.WriteFile(dir+"setgroups", []byte("deny"), 0); err != nil {
			return fmt.Errorf("start sandbox: %w", err)
		}
	}
	for _, m := range []struct {
		file string
		id   int
	}{{"uid_map", rt.uid}, {"gid_map", rt.gid}} {
		var b strings.Builder
		for _, e := range rt.idMap(m.id) {
			fmt.Fprintf(&b, "%d %d %d\n", e.ContainerID, e.HostID, e.Size)
		}
		if err := os.WriteFile(dir+m.file, []byte(b.String()), 0); err != nil {
			return fmt.Errorf("start sandbox: %s: %w", m.file, explainStartErr(err))
		}
	}
	return nil
}

// The runtime's fork hooks, as package syscall uses them (and keeps them
// for other packages that fork: see go.dev/issue/67401): signals are
// blocked on this thread across the clone, so the child starts with them
// blocked and resets every handler before it unblocks them.
//
//go:linkname runtimeBeforeFork syscall.runtime_BeforeFork
func runtimeBeforeFork()

//go:linkname runtimeAfterFork syscall.runtime_AfterFork
func runtimeAfterFork()

// childStack is the size of the memory the children run on: pid 1 on the
// upper half, the command until its exec on the lower.
const childStack = 64 << 10

// forkChild starts pid 1 of a one-shot sandbox in new namespaces, sharing
// cwm's memory (nothing is copied) but running on a stack of its own.
//
//go:norace
func forkChild(c *childArgs) (int, syscall.Errno) {
	runtimeBeforeFork()
	pid, errno := cloneInit(c.flags|syscall.CLONE_VM, c.stack+childStack, c)
	runtimeAfterFork()
	return int(pid), syscall.Errno(errno)
}

// childMain is pid 1: it waits for the host to map its users, builds the
// sandbox, waits to be put in the cgroup, starts the command and waits for
// it. It runs between clone and exec, sharing cwm's memory on a stack of
// its own, so it may only make system calls: no allocation, no stack
// growth, nothing of the Go runtime.
//
//go:nosplit
//go:norace
func childMain(c *childArgs) {
	syscall.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0)
	if !childSync(c) {
		childExit(1)
	}
	if i, e := runSteps(c.setup); i >= 0 {
		childReport(c, reportSetup, uint64(i), uint64(e))
		childExit(1)
	}
	if !childSync(c) {
		childExit(1)
	}
	// vfork: pid 1 waits here until the command has exec'd (or failed to).
	pid, e := cloneCommand(syscall.CLONE_VM|syscall.CLONE_VFORK|uintptr(syscall.SIGCHLD), c.stack+childStack/2, c)
	if e != 0 {
		childReport(c, reportFork, 0, uint64(e))
		childExit(1)
	}
	// The command has its standard descriptors; pid 1 holds no copy.
	for i := 0; i < len(c.stdio); i++ {
		syscall.RawSyscall(unix.SYS_CLOSE, c.stdio[i], 0, 0)
	}
	for {
		w, _, e := syscall.RawSyscall6(unix.SYS_WAIT4, ^uintptr(0), uintptr(unsafe.Pointer(&c.status)), 0,
			uintptr(unsafe.Pointer(&c.rusage)), 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			childExit(1)
		}
		if w == pid {
			break
		}
	}
	ru := &c.rusage
	c.report = [8]uint64{reportExit, uint64(c.status),
		uint64(ru.Utime.Sec)*1e9 + uint64(ru.Utime.Usec)*1e3,
		uint64(ru.Stime.Sec)*1e9 + uint64(ru.Stime.Usec)*1e3, uint64(ru.Maxrss)}
	childSend(c)
	childExit(0)
}

// childCommand becomes the command.
//
//go:nosplit
//go:norace
func childCommand(c *childArgs) {
	if i, e := runSteps(c.cmd); i >= 0 {
		childReport(c, reportCmd, uint64(i), uint64(e))
		childExit(127)
	}
	var last syscall.Errno
	for i := 0; i < len(c.paths); i++ {
		_, _, e := syscall.RawSyscall(unix.SYS_EXECVE, c.paths[i], c.argv, c.envv)
		if e != syscall.ENOENT && e != syscall.ENOTDIR && e != syscall.EACCES {
			childReport(c, reportExec, uint64(i), uint64(e))
			childExit(127)
		}
		last = e
	}
	childReport(c, reportExec, uint64(len(c.paths)), uint64(last))
	childExit(127)
}

//go:nosplit
//go:norace
func childSync(c *childArgs) bool {
	for {
		n, _, e := syscall.RawSyscall(unix.SYS_READ, c.syncR, uintptr(unsafe.Pointer(&c.syncByte[0])), 1)
		if e == syscall.EINTR {
			continue
		}
		return e == 0 && n == 1
	}
}

// childReport sends a report of a failure: its kind and two words.
//
//go:nosplit
//go:norace
func childReport(c *childArgs, kind, a, b uint64) {
	c.report = [8]uint64{kind, a, b}
	childSend(c)
}

// childSend writes c.report to the report pipe, in one write of less than
// PIPE_BUF bytes, so reports never interleave.
//
//go:nosplit
//go:norace
func childSend(c *childArgs) {
	syscall.RawSyscall(unix.SYS_WRITE, c.reportW, uintptr(unsafe.Pointer(&c.report)), 64)
}

//go:nosplit
//go:norace
func childExit(code uintptr) {
	for {
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, code, 0, 0)
	}
}
