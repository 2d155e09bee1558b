//go:build linux

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
// by the parent any more), for a command with a TTY, and on cgroup v2
// before Linux 5.16 (whose kernel checks a cgroup.procs writer's own
// credentials, not the opener's: the command could not enter its
// cgroup), Run takes the New path.
func (rt *Runtime) Run(ctx context.Context, cfg Config, cmd Cmd) (Result, error) {
	if cmd.TTY != nil || rt.uid != 0 || !oneShotSupported || rt.cg.version == 2 && !kernelAtLeast(5, 16) {
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
	// No run directory: pid 1 dies with cwm (a parent-death signal), the
	// kernel kills the rest with pid 1, and a later cwm finds the cgroup by
	// its name (reapStaleCgroups). The cgroup is made while pid 1 builds
	// the sandbox (run).
	setup, err := s.prepare(rt.upperOnDisk)
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

	report   *os.File
	sock     *os.File   // the host's end: the detached mounts go through it
	files    []*os.File // the child's, closed after the fork
	stdio    *stdio
	stack    []byte // unmapped once pid 1 is gone
	setupMsg *setupMsg
}

// childArgs is everything the forked child needs, prepared beforehand: it
// may only read memory and make system calls.
type childArgs struct {
	flags      uintptr
	reportW    uintptr
	sock       uintptr // pid 1's end of the socket the mounts come through
	stdio      [3]uintptr
	setup, cmd []step
	after      []step    // pid 1's, once the command has exec'd
	stack      uintptr   // childStack bytes outside Go's heap
	sigdfl     [4]uint64 // a struct sigaction for SIG_DFL
	sigset     uint64    // an empty signal set
	paths      []uintptr // candidate paths of the command, NUL-terminated
	argv, envv uintptr   // NULL-terminated arrays
	report     [8]uint64
	rusage     unix.Rusage
	statfs     unix.Statfs_t
	upper      uintptr // the upper layer's tmpfs, NUL-terminated
	status     uint32
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
	o := &oneShot{s: s, argv: argv, p: newProcess(ctx, s, cmd), setupMsg: setup}
	defer func() {
		if err != nil {
			o.close()
		}
	}()
	report, reportW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	o.report = report
	o.files = append(o.files, reportW)
	socks, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	o.sock = os.NewFile(uintptr(socks[0]), "sandbox-mounts")
	childSock := os.NewFile(uintptr(socks[1]), "sandbox-mounts")
	o.files = append(o.files, childSock)
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
	o.args.reportW, o.args.sock = reportW.Fd(), childSock.Fd()
	keep := []uintptr{o.args.reportW, o.args.sock, o.args.stdio[0], o.args.stdio[1], o.args.stdio[2]}
	slices.Sort(keep)
	// pid 1 closes every other descriptor first, so the descriptors it
	// receives get the lowest free numbers, in order: known in advance.
	// The detached mounts come first; the cgroup's entry files once the
	// mounts are closed again: v1's two task files or v2's cgroup.procs.
	mountFDs := lowestFree(keep, len(setup.mounts()))
	setup.numberMounts(func(i int) int { return int(mountFDs[i]) })
	taskFDs := lowestFree(keep, map[int]int{1: 2, 2: 1}[s.rt.cg.version])

	env := mergeEnv(s.cfg.Env, cmd.Env)
	dir := s.resolve(cmd.Dir)
	c := &plan{}
	// The command moves itself into the sandbox's cgroups before it execs
	// (see entryFiles); pid 1 stays outside, so the OOM killer cannot pick
	// it, which would kill cwm, whose memory it shares. (First: the files
	// may be numbered 0 and 1, which the next steps reuse.)
	for _, fd := range taskFDs {
		c.call("enter the sandbox's cgroup", unix.SYS_WRITE, fd, c.str("0"), 1)
	}
	for i, fd := range o.args.stdio {
		c.call("set up standard descriptors", unix.SYS_DUP3, fd, uintptr(i), 0)
	}
	if !setup.KeepCaps {
		c.dropCaps()
	}
	c.call("enter the sandbox's root", unix.SYS_CHROOT, c.str("/root"))
	c.call("workdir "+dir, unix.SYS_CHDIR, c.str(dir))
	c.call("new process group", unix.SYS_SETPGID, 0, 0)
	// Descriptors cwm inherited without close-on-exec stay out.
	c.add("close inherited descriptors", step{trap: unix.SYS_CLOSE_RANGE, args: [6]uintptr{3, ^uintptr(0) >> 32, unix.CLOSE_RANGE_CLOEXEC}, ignore: true})
	if !setup.NoSeccomp {
		prog, err := seccompProgram()
		if err != nil {
			return nil, err
		}
		if prog != nil {
			c.call("install the seccomp filter", unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(prog)))
		}
	}
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
	o.setup = o.prologue(keep)
	// The detached mounts come once the host has written the user maps,
	// which they need: receiving them also says that the users are mapped.
	o.setup.recv("receive the layers' mounts", o.args.sock, len(mountFDs))
	// The sandbox is built as cwm's uid, which may reach $CWM_HOME, with
	// every capability in the new namespaces; then pid 1 becomes the
	// sandbox's root, which owns what it creates from there on.
	o.setup.append(scratchPlan(setup))
	if s.rt.ids.mapped() {
		o.setup.becomeRoot()
	}
	o.setup.append(setupPlan(setup))
	o.setup.append(tmpfsPlan(setup, 0))
	o.setup.append(overlayPlan(setup, 0, nil, "/root"))
	for _, fd := range mountFDs {
		o.setup.call("close the layers' mounts", unix.SYS_CLOSE, fd)
	}
	// The host makes the cgroup meanwhile: its task files (v1), or word
	// that pid 1 is in it (v2), come next.
	o.setup.recv("wait for the sandbox's cgroup", o.args.sock, len(taskFDs))
	// Once the command has exec'd, pid 1 makes it the OOM killer's first
	// choice, before cwm (whose memory pid 1 shares) and anything else on
	// the host. (The command cannot before its exec: it still shares
	// cwm's memory, which is not dumpable, so its /proc files are host
	// root's.) It is pid 1's first and only child: pid 2.
	after := &plan{}
	after.add("raise the command's OOM score", step{trap: unix.SYS_OPENAT, fd: true, ignore: true,
		args: [6]uintptr{atFDCWD, after.str("/proc/2/oom_score_adj"), unix.O_WRONLY | unix.O_CLOEXEC}})
	after.add("raise the command's OOM score", step{trap: unix.SYS_WRITE, prev: 1, ignore: true,
		args: [6]uintptr{0, after.str("1000"), 4}})
	after.add("raise the command's OOM score", step{trap: unix.SYS_CLOSE, prev: 1, ignore: true})
	o.setup.keep = append(o.setup.keep, after.keep...)
	o.args.setup, o.args.cmd, o.args.after = o.setup.steps, c.steps, after.steps
	o.args.upper = o.setup.str(genDir(0))
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

// lowestFree returns the n lowest descriptor numbers not in keep (sorted).
func lowestFree(keep []uintptr, n int) []uintptr {
	var out []uintptr
	for fd := uintptr(0); len(out) < n; fd++ {
		if _, found := slices.BinarySearch(keep, fd); !found {
			out = append(out, fd)
		}
	}
	return out
}

// recv makes pid 1 wait for a message from the host on sock, with n
// descriptors.
func (p *plan) recv(what string, sock uintptr, n int) {
	buf := p.mem(1)
	iov := (*unix.Iovec)(unsafe.Pointer(&p.mem(int(unsafe.Sizeof(unix.Iovec{})))[0]))
	iov.Base = &buf[0]
	iov.SetLen(1)
	msg := (*unix.Msghdr)(unsafe.Pointer(&p.mem(int(unsafe.Sizeof(unix.Msghdr{})))[0]))
	msg.Iov = iov
	msg.Iovlen = 1
	if n > 0 {
		ctl := p.mem(unix.CmsgSpace(4 * n))
		msg.Control = &ctl[0]
		msg.SetControllen(len(ctl))
	}
	p.call(what, unix.SYS_RECVMSG, sock, uintptr(unsafe.Pointer(msg)), 0)
}

// becomeRoot makes pid 1 the sandbox's root: it starts as cwm's uid,
// which the sandbox does not map, with every capability in the new user
// namespace; as the sandbox's root it keeps them, and what it creates
// belongs to the sandbox.
func (p *plan) becomeRoot() {
	p.call("become the sandbox's root", unix.SYS_SETRESGID, 0, 0, 0)
	p.call("become the sandbox's root", unix.SYS_SETGROUPS, 0, 0)
	p.call("become the sandbox's root", unix.SYS_SETRESUID, 0, 0, 0)
}

// prologue is what pid 1 does first. It closes every descriptor but its
// own: it shares no descriptor table with cwm but starts with a copy of it,
// and as it never execs, close-on-exec would not drop the copies (another
// command's pipe would then not reach EOF while this sandbox lives). Then
// it resets every signal handler, which are cwm's, and unblocks signals.
func (o *oneShot) prologue(keep []uintptr) *plan {
	p := &plan{}
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
	if o.report != nil {
		o.report.Close()
	}
	if o.sock != nil {
		o.sock.Close()
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
	mounts, err := s.detachMounts(pid, o.setupMsg)
	if err != nil {
		return Result{}, err
	}
	err = o.send(mounts)
	closeAll(mounts)
	if err != nil {
		return Result{}, fmt.Errorf("start sandbox: pass the layers' mounts: %w", err)
	}
	// While pid 1 builds the sandbox: its cgroup.
	if err := s.makeCgroup(0); err != nil {
		return Result{}, err
	}
	tasks, err := s.cg.entryFiles()
	if err != nil {
		return Result{}, err
	}
	defer closeAll(tasks)
	p.counters = s.cg.counters()
	if err := o.send(tasks); err != nil {
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
			info.DiskFull = diskFull(r[5], r[6])
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

// send passes files to pid 1 in one message.
func (o *oneShot) send(files []*os.File) error {
	return unix.Sendmsg(int(o.sock.Fd()), []byte{1}, rights(files), nil, 0)
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

// writeIDMaps maps the sandbox's users as New does (see IDBlock).
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
	}{{"uid_map", rt.ids.UID}, {"gid_map", rt.ids.GID}} {
		var b strings.Builder
		for _, e := range rt.ids.idMap(m.id) {
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
	if i, e := runSteps(c.setup); i >= 0 {
		childReport(c, reportSetup, uint64(i), uint64(e))
		childExit(1)
	}
	// vfork: pid 1 waits here until the command has exec'd (or failed to).
	pid, e := cloneCommand(syscall.CLONE_VM|syscall.CLONE_VFORK|uintptr(syscall.SIGCHLD), c.stack+childStack/2, c)
	if e != 0 {
		childReport(c, reportFork, 0, uint64(e))
		childExit(1)
	}
	if pid == 2 {
		runSteps(c.after)
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
	// How full the upper layer is says whether the disk limit stopped it.
	syscall.RawSyscall(unix.SYS_STATFS, c.upper, uintptr(unsafe.Pointer(&c.statfs)), 0)
	c.report = [8]uint64{reportExit, uint64(c.status),
		uint64(ru.Utime.Sec)*1e9 + uint64(ru.Utime.Usec)*1e3,
		uint64(ru.Stime.Sec)*1e9 + uint64(ru.Stime.Usec)*1e3, uint64(ru.Maxrss),
		c.statfs.Bavail * uint64(c.statfs.Bsize), c.statfs.Ffree}
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
