package sandbox

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// initArg0 is the argv[0] under which this binary runs as a sandbox's init.
const initArg0 = "cwm-sandbox-init"

// The check runs in a package initialiser rather than in main so that the
// re-executed binary starts serving before the rest of cwm initialises, and
// so that test binaries that link this package can start sandboxes too.
func init() {
	if len(os.Args) > 0 && os.Args[0] == initArg0 {
		runInit()
	}
}

// initState is the sandbox's pid 1.
type initState struct {
	c      *conn
	sendMu sync.Mutex // serialises init's replies on c

	setup *setupMsg
	forks chan forkReq // to the forker thread

	// startMu is held while a command is being started, and by scans that
	// decide which processes are strays, so a command between fork and
	// registration is never mistaken for one.
	startMu sync.Mutex

	mu      sync.Mutex
	gen     int
	root    string         // where the overlay commands see as / is mounted ("" for /root; see swap)
	frozen  []frozenLayer  // the frozen layers under the upper one, topmost first (see freeze_linux.go)
	mounted int            // how many frozen layers were ever attached (names /f<N>)
	running map[int]*child // pid -> running command
	early   map[int]exitStatus
	byID    map[uint64]*child

	// teardown, set by a swap of overlays, is run by the request loop
	// once the reply is sent (afterReply).
	teardown func()
}

type child struct {
	pid  int
	id   uint64
	done chan exitStatus
	kill chan string
}

type exitStatus struct {
	ws syscall.WaitStatus
	ru syscall.Rusage
}

func runInit() {
	// Descriptors cwm inherited from whatever started it (a shell's
	// "exec 9>lock", a job runner's pipes) and did not open itself lack
	// close-on-exec, so every command would inherit them: a host file
	// held open, writable, inside the sandbox. Init keeps its socket (3)
	// and what the runtime opened; nothing above 3 reaches a command.
	closeInherited(4)
	// Signals from inside the sandbox must not stop init: pid 1 of a pid
	// namespace only receives signals it handles, and Go's handlers would
	// otherwise exit on SIGTERM and friends. They are caught and dropped,
	// not ignored: an ignored disposition would survive exec into every
	// command (a command could not then die of SIGPIPE or SIGXFSZ).
	drop := make(chan os.Signal, 16)
	signal.Notify(drop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGPIPE, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGXCPU, syscall.SIGXFSZ)
	go func() {
		for range drop {
		}
	}()
	c, err := newConn(3)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cwm sandbox init: %v\n", err)
		os.Exit(111)
	}
	in := &initState{c: c, running: map[int]*child{}, early: map[int]exitStatus{}, byID: map[uint64]*child{}}
	var req request
	files, err := c.recv(&req)
	if err != nil || req.Op != "setup" || req.Setup == nil {
		fmt.Fprintf(os.Stderr, "cwm sandbox init: no setup message: %v\n", err)
		os.Exit(111)
	}
	sigc := make(chan os.Signal, 64)
	signal.Notify(sigc, syscall.SIGCHLD)
	if err := in.build(req.Setup, files); err != nil {
		in.reply(reply{ID: req.ID, Op: "error", Err: err.Error()})
		os.Exit(111)
	}
	go in.reap(sigc)
	in.reply(reply{ID: req.ID, Op: "ready", Gen: req.Setup.Gen})
	in.serve()
	os.Exit(0)
}

func (in *initState) reply(r reply, files ...*os.File) {
	in.sendMu.Lock()
	defer in.sendMu.Unlock()
	in.c.send(r, files...)
}

// serve handles requests until the host goes away. When it returns, init
// exits and the kernel kills every process of the pid namespace.
func (in *initState) serve() {
	var next *request // read already, by afterReply
	var nextFiles []*os.File
	for {
		req, files := next, nextFiles
		next, nextFiles = nil, nil
		if req == nil {
			req = new(request)
			var err error
			if files, err = in.c.recv(req); err != nil {
				return
			}
		}
		switch req.Op {
		case "exec":
			go in.exec(*req, files, nil)
		case "kill":
			in.mu.Lock()
			ch := in.byID[req.Target]
			in.mu.Unlock()
			if ch != nil {
				select {
				case ch.kill <- req.Reason:
				default:
				}
			}
		case "reset", "recycle":
			gen, err := in.reset(req.Gen, req.Op == "recycle")
			if err != nil {
				in.replyErr(req.ID, err)
			} else {
				in.reply(reply{ID: req.ID, Op: "ok", Gen: gen})
			}
		case "freeze":
			gen, f, err := in.freeze(req.Gen, req.Layer)
			if err != nil {
				in.replyErr(req.ID, err)
			} else if f != nil {
				in.reply(reply{ID: req.ID, Op: "ok", Gen: gen}, f)
				f.Close()
			} else {
				in.reply(reply{ID: req.ID, Op: "ok", Gen: gen})
			}
		case "stack":
			gen, err := in.stack(req.Gen, req.Layers, files)
			if err != nil {
				in.replyErr(req.ID, err)
			} else {
				in.reply(reply{ID: req.ID, Op: "ok", Gen: gen})
			}
		case "prepare":
			in.replyErr(req.ID, in.prepare(req.Gen, files))
		case "readfile":
			go in.readFile(*req, files)
		case "writefile":
			go in.writeFile(*req, files)
		case "stat":
			in.stat(*req)
		case "listen":
			closeAll(files)
			in.listen(*req)
		default:
			closeAll(files)
			in.replyErr(req.ID, fmt.Errorf("unknown request %q", req.Op))
		}
		// What a swap of overlays (reset, freeze, stack) left to do.
		var err error
		if next, nextFiles, err = in.afterReply(); err != nil {
			return
		}
	}
}

func (in *initState) replyErr(id uint64, err error) {
	if err != nil {
		in.reply(reply{ID: id, Op: "error", Err: err.Error()})
		return
	}
	in.reply(reply{ID: id, Op: "ok"})
}

// reap collects every child of init: commands it started and orphans the
// kernel reparented to it.
func (in *initState) reap(sigc chan os.Signal) {
	for range sigc {
		for {
			var st exitStatus
			pid, err := syscall.Wait4(-1, &st.ws, syscall.WNOHANG, &st.ru)
			if pid <= 0 || err != nil {
				break
			}
			in.mu.Lock()
			if c := in.running[pid]; c != nil {
				delete(in.running, pid)
				c.done <- st
			} else {
				in.early[pid] = st
			}
			in.mu.Unlock()
		}
	}
}

// register records a started command; a command that exited before it was
// registered finds its status waiting.
func (in *initState) register(c *child) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.byID[c.id] = c
	if st, ok := in.early[c.pid]; ok {
		delete(in.early, c.pid)
		c.done <- st
		return
	}
	in.running[c.pid] = c
}

func (in *initState) unregister(c *child) {
	in.mu.Lock()
	delete(in.byID, c.id)
	delete(in.running, c.pid)
	// Orphans reaped so far are nobody's business.
	clear(in.early)
	in.mu.Unlock()
}

// exec runs one command until it ends. started, when set, is closed once
// the command's process exists (or its start failed).
func (in *initState) exec(req request, files []*os.File, started chan<- struct{}) {
	markStarted := sync.OnceFunc(func() {
		if started != nil {
			close(started)
		}
	})
	defer markStarted()
	m := req.Exec
	defer closeAll(files)
	if m == nil || len(m.Argv) == 0 || len(files) != 3 {
		in.replyErr(req.ID, fmt.Errorf("malformed exec request"))
		return
	}
	path, err := in.lookPath(m.Argv[0], m.Env, m.Dir)
	if err != nil {
		in.replyErr(req.ID, err)
		return
	}
	sys := &syscall.SysProcAttr{}
	if m.TTY {
		sys.Setsid, sys.Setctty, sys.Ctty = true, true, 0
	} else {
		sys.Setpgid = true
	}
	attr := &syscall.ProcAttr{
		Dir:   m.Dir,
		Env:   m.Env,
		Files: []uintptr{files[0].Fd(), files[1].Fd(), files[2].Fd()},
		Sys:   sys,
	}
	in.startMu.Lock()
	// The root is read under startMu: a swap of overlays (reset,
	// checkpoint, rollback) holds it, and its commands are dead by then.
	sys.Chroot = in.rootDir()
	pid, err := in.forkExec(path, m.Argv, attr)
	if err != nil {
		in.startMu.Unlock()
		in.replyErr(req.ID, fmt.Errorf("start %s: %w", m.Argv[0], err))
		return
	}
	c := &child{pid: pid, id: req.ID, done: make(chan exitStatus, 1), kill: make(chan string, 1)}
	in.register(c)
	in.startMu.Unlock()
	closeAll(files)
	files = nil
	in.reply(reply{ID: req.ID, Op: "started", Pid: pid})
	markStarted()

	var timeout <-chan time.Time
	if m.Timeout > 0 {
		t := time.NewTimer(time.Duration(m.Timeout))
		defer t.Stop()
		timeout = t.C
	}
	info := &exitInfo{}
	var st exitStatus
	select {
	case st = <-c.done:
	case <-timeout:
		info.TimedOut = true
		st = in.stop(c, time.Duration(m.Grace))
	case why := <-c.kill:
		info.Killed = why
		st = in.stop(c, 0)
	}
	in.unregister(c)
	// Whatever the command left behind (its process group, children it
	// orphaned, daemons that double-forked away) goes with it.
	syscall.Kill(-c.pid, syscall.SIGKILL)
	in.killStrays()
	info.setExit(st.ws, st.ru.Utime.Nano(), st.ru.Stime.Nano(), st.ru.Maxrss)
	info.DiskFull = in.diskFull()
	in.reply(reply{ID: req.ID, Op: "exit", Exit: info})
}

// diskFull reports whether the current upper layer is full.
func (in *initState) diskFull() bool {
	in.mu.Lock()
	g := genDir(in.gen)
	in.mu.Unlock()
	var st unix.Statfs_t
	if unix.Statfs(g, &st) != nil {
		return false
	}
	return diskFull(st.Bavail*uint64(st.Bsize), st.Ffree)
}

// stop ends a command: SIGTERM to its process group, then after grace
// SIGKILL to the group and every descendant.
func (in *initState) stop(c *child, grace time.Duration) exitStatus {
	if grace > 0 {
		syscall.Kill(-c.pid, syscall.SIGTERM)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case st := <-c.done:
			return st
		case <-t.C:
		}
	}
	for {
		syscall.Kill(-c.pid, syscall.SIGKILL)
		in.killDescendants(c.pid)
		select {
		case st := <-c.done:
			return st
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// killDescendants kills every process whose ancestry leads to pid.
func (in *initState) killDescendants(pid int) {
	procs := scanProcs()
	for p := range procs {
		for q := p; q > 1; q = procs[q].ppid {
			if q == pid {
				syscall.Kill(p, syscall.SIGKILL)
				break
			}
			if _, ok := procs[q]; !ok {
				break
			}
		}
	}
}

// killStrays kills processes that no running command owns: their ancestry
// reaches init without passing through a command init is tracking. These
// are what finished commands left behind (orphans, setsid daemons). It
// repeats until none are left, so a process forking as fast as it can is
// still caught: a process with SIGKILL pending cannot fork.
func (in *initState) killStrays() {
	in.startMu.Lock()
	defer in.startMu.Unlock()
	for round := 0; round < 200; round++ {
		in.mu.Lock()
		tracked := make(map[int]bool, len(in.running))
		for pid := range in.running {
			tracked[pid] = true
		}
		in.mu.Unlock()
		procs := scanProcs()
		n := 0
		for p, pr := range procs {
			if p == 1 || tracked[p] {
				continue
			}
			owned := false
			for q := pr.ppid; q > 1; {
				if tracked[q] {
					owned = true
					break
				}
				next, ok := procs[q]
				if !ok {
					break
				}
				q = next.ppid
			}
			if !owned {
				// A stray zombie only waits for init's reaper; it is
				// counted so that none is still listed when this returns.
				if !pr.zombie {
					syscall.Kill(p, syscall.SIGKILL)
				}
				n++
			}
		}
		if n == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// killAll kills every process but init and waits until none is left.
func (in *initState) killAll() {
	in.startMu.Lock()
	defer in.startMu.Unlock()
	for round := 0; ; round++ {
		syscall.Kill(-1, syscall.SIGKILL)
		alive := 0
		for p, pr := range scanProcs() {
			if p != 1 && !pr.zombie {
				alive++
			}
		}
		if alive == 0 {
			return
		}
		time.Sleep(500 * time.Microsecond)
	}
}

type procInfo struct {
	ppid   int
	zombie bool
}

// scanProcs lists the sandbox's processes from init's /proc.
func scanProcs() map[int]procInfo {
	out := map[int]procInfo{}
	d, err := os.Open("/proc")
	if err != nil {
		return out
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	buf := make([]byte, 512)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		fd, err := unix.Open("/proc/"+name+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		n, _ := unix.Read(fd, buf)
		unix.Close(fd)
		if n <= 0 {
			continue
		}
		ppid, state, ok := parseStat(buf[:n])
		if !ok {
			continue
		}
		out[pid] = procInfo{ppid: ppid, zombie: state == 'Z' || state == 'X'}
	}
	return out
}

// parseStat extracts the state and parent pid from /proc/PID/stat. The
// command name may contain spaces and parentheses, so parsing starts after
// the last ')'.
func parseStat(b []byte) (ppid int, state byte, ok bool) {
	i := len(b) - 1
	for i >= 0 && b[i] != ')' {
		i--
	}
	if i < 0 || i+4 >= len(b) {
		return 0, 0, false
	}
	state = b[i+2]
	j := i + 4
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		ppid = ppid*10 + int(b[j]-'0')
		j++
	}
	return ppid, state, true
}

// closeInherited marks every descriptor from lo up close-on-exec (with
// close_range, or one by one from /proc/self/fd on kernels without its
// CLOSE_RANGE_CLOEXEC).
func closeInherited(lo int) {
	if unix.CloseRange(uint(lo), ^uint(0)>>32, unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= lo {
			unix.CloseOnExec(fd)
		}
	}
}
