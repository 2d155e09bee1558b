package sandbox

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrDead is returned by operations on a sandbox whose init has gone (it was
// closed, or killed from outside).
var ErrDead = errors.New("sandbox is gone")

// Sandbox is one isolated environment. Its methods are safe for concurrent
// use; Exec and Shell may run side by side.
type Sandbox struct {
	rt   *Runtime
	id   string
	dir  string // host: <run>/<id>
	cfg  Config
	key  string
	cg   *sandboxCgroup
	init *exec.Cmd
	c    *conn

	// sendMu serialises writes of requests (and the descriptors they
	// carry) to init's connection c, so that messages never interleave.
	sendMu sync.Mutex
	nextID atomic.Uint64

	// mu guards pending, gen and stack.
	mu      sync.Mutex
	pending map[uint64]chan reply // request id -> where its reply goes
	gen     int                   // the upper layer's generation (Reset makes a new one)
	stack   []*layer              // the frozen layers under the upper one, topmost first (one reference each)

	dead      chan struct{} // closed once init has exited and been waited for
	loopDone  chan struct{} // closed when readLoop ends: init is dead or killed
	deadErr   error
	closed    atomic.Bool
	idleSince time.Time

	// recycled, while set, is closed when the reset that readies this
	// warm sandbox for its next user has finished; recycleErr is its
	// outcome.
	recycled   chan struct{}
	recycleErr error

	// lnMu guards listeners, the sockets Listen handed out (a copy of
	// each), which Close shuts down.
	lnMu      sync.Mutex
	listeners []*os.File
}

// ID is the sandbox's identifier (the name of its run directory).
func (s *Sandbox) ID() string { return s.id }

// Config returns the sandbox's normalized configuration.
func (s *Sandbox) Config() Config { return s.cfg }

// OOMKills is how many processes the sandbox's memory limit has killed
// since it started, or -1 without a memory cgroup (rlimits only). A
// caller that sees it move while a long-lived process of its own serves
// requests knows that a request ran out of memory, whatever that process
// could see; the machine-wide count would also move for every other
// cgroup's OOM kills.
func (s *Sandbox) OOMKills() int64 {
	if s.cg == nil {
		return -1
	}
	return s.cg.counters().oomKills
}

func randomID() string { return randomHex(8) }

// randomHex returns n random bytes from the kernel, in hex. (Not
// crypto/rand, whose dependencies would initialise before sandbox init
// can start; see init_linux.go.)
func randomHex(n int) string {
	b := make([]byte, n)
	for got := 0; got < n; {
		m, err := unix.Getrandom(b[got:], 0)
		if err != nil && err != unix.EINTR {
			panic(fmt.Sprintf("getrandom: %v", err))
		}
		got += max(m, 0)
	}
	return hex.EncodeToString(b)
}

// start creates a new sandbox.
func (rt *Runtime) start(ctx context.Context, cfg Config) (_ *Sandbox, err error) {
	s := &Sandbox{rt: rt, id: randomID(), cfg: cfg, key: cfg.key(), pending: map[uint64]chan reply{}, dead: make(chan struct{}), loopDone: make(chan struct{})}
	defer func() {
		if err != nil {
			s.destroy()
		}
	}()
	// Init's forking thread (cgroup v1) or all of init's threads (v2) are
	// in the cgroup beside the commands.
	setup, err := s.prepare(true)
	if err != nil {
		return nil, err
	}
	if err := s.makeCgroup(map[int]int64{1: 1, 2: 16}[rt.cg.version]); err != nil {
		return nil, err
	}
	// Descriptors passed with the set-up: the cgroup task files, then the
	// detached mounts (start fills those in once init exists).
	tasks, err := s.cg.taskFiles()
	if err != nil {
		return nil, err
	}
	defer closeAll(tasks)
	for i := range tasks {
		setup.Tasks = append(setup.Tasks, i)
	}
	if rt.canDetach() {
		setup.numberMounts(func(i int) int { return len(tasks) + i })
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	child := os.NewFile(uintptr(fds[1]), "sandbox-init")
	defer child.Close()
	if s.c, err = newConn(fds[0]); err != nil {
		return nil, err
	}
	logf, err := os.Create(s.dir + "/init.log")
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	sys := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
			syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWNET,
		UidMappings: rt.ids.idMap(rt.ids.UID),
		GidMappings: rt.ids.idMap(rt.ids.GID),
		// Only root may let the sandbox call setgroups; otherwise the
		// kernel requires it to be denied before mapping groups.
		GidMappingsEnableSetgroups: rt.uid == 0,
		Pdeathsig:                  syscall.SIGKILL,
	}
	if rt.ids.mapped() {
		// cwm's uid is not mapped in the sandbox, so the kernel would drop
		// init's capabilities in its namespaces at exec: it keeps those it
		// needs as ambient ones, builds the sandbox still as cwm's uid
		// (which may reach $CWM_HOME) and then becomes the sandbox's root.
		sys.AmbientCaps = initCaps
	}
	cmd := &exec.Cmd{
		Path: "/proc/self/exe",
		Args: []string{initArg0},
		// Init allocates little (collect it rarely) and needs one
		// processor: with more, Go keeps idle threads around (9 an init
		// with two), and every thread counts against the machine's
		// pid_max, which a server holding thousands of sandboxes reaches.
		Env:         []string{"GOGC=400", "GOMAXPROCS=1"},
		ExtraFiles:  []*os.File{child},
		Stderr:      logf,
		SysProcAttr: sys,
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start sandbox init: %w", explainStartErr(err))
	}
	s.init = cmd
	// Init's replies are read from now on; the read loop ends, killing
	// init if it is not dead yet, when init's end of the socket closes.
	// Only then is init reaped: cmd.Wait alone would hold an OS thread
	// blocked in waitid(2) for the sandbox's whole life, and Go keeps a
	// thread it made for good, so a server holding thousands of
	// sandboxes held as many threads, each a pid of the machine's
	// kernel.pid_max and one of Go's 10,000.
	go s.readLoop()
	go func() {
		<-s.loopDone
		err := cmd.Wait()
		s.mu.Lock()
		s.deadErr = err
		s.mu.Unlock()
		s.c.close()
		close(s.dead)
	}()
	// Init waits for its set-up message, so it is in place (its record
	// written, on cgroup v2 in the cgroup) before it starts anything.
	if err := s.enter(cmd.Process.Pid); err != nil {
		return nil, err
	}
	files := append([]*os.File{}, tasks...)
	if rt.canDetach() {
		mounts, err := s.detachMounts(cmd.Process.Pid, setup)
		if err != nil {
			return nil, err
		}
		defer closeAll(mounts)
		files = append(files, mounts...)
	}
	r, err := s.call(ctx, request{Op: "setup", Setup: setup}, files...)
	if err != nil {
		if errors.Is(err, ErrDead) {
			msg, _ := os.ReadFile(s.dir + "/init.log")
			if m := strings.TrimSpace(string(msg)); m != "" {
				return nil, fmt.Errorf("sandbox init failed: %s", m)
			}
		}
		return nil, fmt.Errorf("set up sandbox: %w", err)
	}
	s.gen = r.Gen
	return s, nil
}

// prepare describes the sandbox's set-up, with every read-only directory
// to be bound by its host path (numberMounts turns them into detached
// mounts). With dir it also makes the sandbox's run directory (for init's
// record and log, and the upper layers when they are on disk).
func (s *Sandbox) prepare(dir bool) (*setupMsg, error) {
	rt, cfg := s.rt, s.cfg
	l := cfg.Limits
	if dir {
		run, err := rt.runDir()
		if err != nil {
			return nil, err
		}
		s.dir = filepath.Join(run, s.id)
		if err := os.Mkdir(s.dir, 0o700); err != nil {
			return nil, fmt.Errorf("create sandbox directory: %w", err)
		}
	}
	if rt.upperOnDisk {
		if s.dir == "" {
			return nil, errors.New("upper layers on disk need the sandbox's run directory")
		}
		state := s.dir + "/state"
		if err := os.Mkdir(state, 0o755); err != nil {
			return nil, fmt.Errorf("create sandbox directory: %w", err)
		}
		// The sandbox's root makes the generations in it.
		if err := os.Chown(state, rt.ids.UID, rt.ids.GID); err != nil {
			return nil, fmt.Errorf("create sandbox directory: %w", err)
		}
	}
	msg := &setupMsg{
		Scratch: rt.mnt, Hostname: cfg.Hostname, Rlimits: rlimits(l, rt.cg.version == 0),
		NoCgroup: rt.cg.version == 0, Memory: l.Memory, Pids: l.Pids, Disk: l.Disk, Inodes: inodes(l.Disk),
		NoSeccomp: rt.weak.noSeccomp, KeepCaps: rt.weak.allCaps,
	}
	if !rt.weak.noMasks {
		msg.ProcFiles, msg.ProcDirs, msg.ProcRO = procMaskedFiles, procMaskedDirs, procReadOnly
	}
	if rt.upperOnDisk {
		msg.State = &mountSrc{Path: s.dir + "/state", FD: -1, RW: true}
	}
	for _, d := range s.lowerDirs() {
		msg.Lowers = append(msg.Lowers, mountSrc{Path: d, FD: -1})
	}
	if cfg.Base == "" {
		for _, d := range rt.hostFS {
			msg.HostDirs = append(msg.HostDirs, mountSrc{Path: d, Dst: d, FD: -1})
		}
		etc := rt.etc
		if rt.weak.hostEtc {
			etc = "/etc"
		}
		msg.HostDirs = append(msg.HostDirs, mountSrc{Path: etc, Dst: "/etc", FD: -1})
	}
	return msg, nil
}

// makeCgroup makes the sandbox's cgroup, when the host has cgroups.
func (s *Sandbox) makeCgroup(extraPids int64) error {
	if s.rt.cg.version == 0 {
		return nil
	}
	var err error
	s.cg, err = s.rt.cg.create(s.id, s.cfg.Limits, extraPids)
	return err
}

// inodes is how many files a tmpfs of size bytes may hold: one per 4 KiB,
// and at least 64Ki.
func inodes(size int64) int64 { return max(size/4096, 64<<10) }

// mounts lists the read-only directories of the set-up in the order their
// detached mounts are passed.
func (m *setupMsg) mounts() []*mountSrc {
	var out []*mountSrc
	for i := range m.Lowers {
		out = append(out, &m.Lowers[i])
	}
	for i := range m.HostDirs {
		out = append(out, &m.HostDirs[i])
	}
	if m.State != nil {
		out = append(out, m.State)
	}
	return out
}

// numberMounts says that every read-only directory comes as a detached
// mount, the i'th as descriptor fd(i).
func (m *setupMsg) numberMounts(fd func(i int) int) {
	for i, src := range m.mounts() {
		src.FD = fd(i)
	}
}

// canDetach reports whether this cwm can make detached mounts for its
// sandboxes (open_tree needs CAP_SYS_ADMIN in the host's namespaces), which
// it then shows through the sandbox's ids. Otherwise the sandbox binds the
// directories itself.
func (rt *Runtime) canDetach() bool { return rt.uid == 0 }

// detachMounts makes the detached mounts of the set-up's read-only
// directories for the sandbox whose first process is pid.
func (s *Sandbox) detachMounts(pid int, setup *setupMsg) ([]*os.File, error) {
	srcs := setup.mounts()
	files, mapped, err := detachedMounts(pid, srcs, s.rt.ids.mapped())
	if err != nil {
		return nil, fmt.Errorf("start sandbox: %w", err)
	}
	for i, ok := range mapped {
		if !ok && !srcs[i].RW && s.rt.ids.mapped() {
			s.rt.warnUnmapped(srcs[i].Path)
		}
	}
	return files, nil
}

// enter records pid as the sandbox's first process, so that a later cwm
// can reap it if this one dies. On cgroup v2, which has no per-thread
// cgroups, it also moves pid into the sandbox's cgroup and takes it out of
// the OOM killer's choices (commands are made its first choice instead).
func (s *Sandbox) enter(pid int) error {
	rec := sandboxRecord{InitPid: pid, InitStart: procStart(pid)}
	if s.cg != nil {
		rec.Cgroups = s.cg.dirs
	}
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(s.dir+"/sandbox.json", b, 0o600); err != nil {
		return err
	}
	if s.cg != nil && s.cg.version == 2 {
		if err := s.cg.add(pid); err != nil {
			return err
		}
		return protectFromOOM(pid)
	}
	return nil
}

func explainStartErr(err error) error {
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("%w (creating user namespaces is not allowed here: check "+
			"/proc/sys/user/max_user_namespaces, kernel.unprivileged_userns_clone and "+
			"kernel.apparmor_restrict_unprivileged_userns)", err)
	}
	return err
}

func rlimits(l Limits, noCgroup bool) []rlimit {
	cpu := uint64(l.CPU / time.Second)
	if cpu == 0 {
		cpu = 1
	}
	rl := []rlimit{
		// SIGXCPU at the soft limit, SIGKILL a little later.
		{Res: unix.RLIMIT_CPU, Cur: cpu, Max: cpu + 2, Name: "cpu"},
		{Res: unix.RLIMIT_FSIZE, Cur: uint64(l.FileSize), Max: uint64(l.FileSize), Name: "file size"},
		{Res: unix.RLIMIT_NOFILE, Cur: uint64(l.OpenFiles), Max: uint64(l.OpenFiles), Name: "open files"},
		{Res: unix.RLIMIT_CORE, Cur: 0, Max: 0, Name: "core"},
	}
	if noCgroup {
		rl = append(rl,
			// RLIMIT_DATA (private writable memory) rather than RLIMIT_AS:
			// address space reserved but unused (Go's and Java's heaps,
			// sanitizers, sandbox init itself at over 1 GiB) does not count.
			rlimit{Res: unix.RLIMIT_DATA, Cur: uint64(l.Memory), Max: uint64(l.Memory), Name: "memory"},
			rlimit{Res: unix.RLIMIT_NPROC, Cur: uint64(l.Pids), Max: uint64(l.Pids), Name: "processes"})
	}
	return rl
}

// readLoop delivers init's replies to whoever waits for them.
func (s *Sandbox) readLoop() {
	defer close(s.loopDone)
	for {
		var r reply
		files, err := s.c.recv(&r)
		if err != nil {
			// Init is gone or talking nonsense; either way it is of no
			// further use.
			if s.init.Process != nil {
				s.init.Process.Kill()
			}
			return
		}
		s.mu.Lock()
		ch := s.pending[r.ID]
		s.mu.Unlock()
		r.files = files
		if ch == nil {
			closeAll(files)
			continue
		}
		ch <- r
	}
}

func (s *Sandbox) register() (uint64, chan reply) {
	id := s.nextID.Add(1)
	ch := make(chan reply, 2)
	s.mu.Lock()
	s.pending[id] = ch
	s.mu.Unlock()
	return id, ch
}

func (s *Sandbox) unregister(id uint64) {
	s.mu.Lock()
	delete(s.pending, id)
	s.mu.Unlock()
}

func (s *Sandbox) send(req request, files ...*os.File) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if err := s.c.send(req, files...); err != nil {
		select {
		case <-s.dead:
			return ErrDead
		default:
		}
		return fmt.Errorf("send to sandbox: %w", err)
	}
	return nil
}

// wait returns the next reply on ch, or an error when the sandbox dies or
// ctx ends first.
func (s *Sandbox) wait(ctx context.Context, ch chan reply) (reply, error) {
	select {
	case r := <-ch:
		if r.Op == "error" {
			return r, errors.New(r.Err)
		}
		return r, nil
	case <-s.dead:
		// A reply may have raced with init's exit.
		select {
		case r := <-ch:
			if r.Op == "error" {
				return r, errors.New(r.Err)
			}
			return r, nil
		default:
		}
		return reply{}, ErrDead
	case <-ctx.Done():
		return reply{}, ctx.Err()
	}
}

// call sends one request and waits for its reply.
func (s *Sandbox) call(ctx context.Context, req request, files ...*os.File) (reply, error) {
	return s.callThen(ctx, req, nil, files...)
}

// callThen is call that runs then, when set, once the request is sent and
// before its reply is waited for: a request then sends reaches init right
// behind this one, without a round trip between them.
func (s *Sandbox) callThen(ctx context.Context, req request, then func(), files ...*os.File) (reply, error) {
	id, ch := s.register()
	defer s.unregister(id)
	req.ID = id
	if err := s.send(req, files...); err != nil {
		return reply{}, err
	}
	if then != nil {
		then()
	}
	return s.wait(ctx, ch)
}

func (s *Sandbox) alive() bool {
	select {
	case <-s.dead:
		return false
	default:
		return true
	}
}

// Reset kills every command and drops the upper layer: the sandbox is as it
// was when created, with no trace of earlier writes. Shell sessions end.
func (s *Sandbox) Reset(ctx context.Context) error {
	return s.resetTo(ctx, "reset", nil)
}

// resetTo swaps in a fresh upper layer (op "reset" or "recycle"); seed,
// when set, is an upper layer (a directory descriptor) it starts as a copy
// of. Init makes the copy: the new layer is a tmpfs of the sandbox's user
// namespace, where only its ids may create files.
func (s *Sandbox) resetTo(ctx context.Context, op string, seed *os.File) error {
	s.mu.Lock()
	gen := s.gen + 1
	s.mu.Unlock()
	if seed != nil {
		if _, err := s.call(ctx, request{Op: "prepare", Gen: gen}, seed); err != nil {
			return fmt.Errorf("copy upper layer: %w", err)
		}
	}
	r, err := s.call(ctx, request{Op: op, Gen: gen})
	if err != nil {
		return fmt.Errorf("%s sandbox: %w", op, err)
	}
	s.mu.Lock()
	s.gen = r.Gen
	s.mu.Unlock()
	s.dropStack()
	return nil
}

// busy reports whether a command started in the sandbox has not been
// waited for.
func (s *Sandbox) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) > 0
}

func (s *Sandbox) recycle() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.resetTo(ctx, "recycle", nil)
}

// upperDir is the host path of the current upper layer: it lives in a
// tmpfs mounted in the sandbox's own mount namespace, which the host
// reaches through init's root. Commands never see /state, so nothing of
// that path is theirs; below upper, everything is (see tree).
func (s *Sandbox) upperDir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.upperOf(s.gen)
}

func (s *Sandbox) upperOf(gen int) string {
	return fmt.Sprintf("/proc/%d/root%s/upper", s.init.Process.Pid, genDir(gen))
}

// lowerDirs are the host paths of the read-only layers, topmost first.
// The skeleton lies under every base: a root filesystem from an image need
// not have /proc, /dev, /sys or /tmp, and the sandbox mounts its own
// procfs and /dev there, and commands expect a /tmp they may write.
func (s *Sandbox) lowerDirs() []string {
	l := append([]string{}, s.cfg.Layers...)
	if s.cfg.Base != "" {
		l = append(l, s.cfg.Base)
	}
	return append(l, s.rt.skel)
}

// Clone returns a new sandbox with the same configuration whose upper layer
// starts as a copy of this one's. Later writes in either are invisible to
// the other. Commands running in s while it is cloned may leave the copy
// with a partial write.
func (s *Sandbox) Clone(ctx context.Context) (*Sandbox, error) {
	if !s.alive() {
		return nil, ErrDead
	}
	seed, err := os.OpenFile(s.upperDir(), os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("clone sandbox: %w", err)
	}
	defer seed.Close()
	s.mu.Lock()
	stack := slices.Clone(s.stack)
	s.mu.Unlock()
	if len(stack) > 0 {
		// The copy of the upper layer goes over the same frozen layers,
		// shared; they are held while the clone is made.
		s.rt.ref(stack)
		defer s.rt.unref(stack)
		return s.fork(ctx, func(n *Sandbox) error { return n.stackOn(ctx, stack, seed, nil) })
	}
	return s.fork(ctx, func(n *Sandbox) error { return n.resetTo(ctx, "reset", seed) })
}

// fork returns a new sandbox with s's configuration, a warm one if the
// runtime keeps one, whose files fill makes.
func (s *Sandbox) fork(ctx context.Context, fill func(*Sandbox) error) (*Sandbox, error) {
	if !s.alive() {
		return nil, ErrDead
	}
	return s.rt.fork(ctx, s.cfg, s.key, fill)
}

// fork is Sandbox.fork for a sandbox of configuration cfg, whose key is
// key.
func (rt *Runtime) fork(ctx context.Context, cfg Config, key string, fill func(*Sandbox) error) (*Sandbox, error) {
	if warm := rt.takeWarm(key); warm != nil {
		if err := fill(warm); err == nil {
			if err := rt.adopt(warm); err != nil {
				go warm.destroy()
				return nil, err
			}
			warm.cfg = cfg
			warm.closed.Store(false)
			return warm, nil
		}
		warm.destroy()
	}
	c, err := rt.start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := fill(c); err != nil {
		c.destroy()
		return nil, err
	}
	if err := rt.adopt(c); err != nil {
		go c.destroy()
		return nil, err
	}
	return c, nil
}

// Close ends the sandbox: every process in it is killed, its upper layer
// is dropped. A sandbox the runtime keeps warm for reuse is reset in the
// background when none of its commands is running (their processes are
// already gone); the next New that takes it waits for that. Close is
// idempotent.
func (s *Sandbox) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	s.closeListeners()
	// The frozen layers are let go of now, not when a warm sandbox is
	// recycled: the overlay that still stands on them holds their
	// memory until then, the checkpoints' counts do not.
	s.dropStack()
	return s.rt.release(s, s.alive())
}

// destroy kills init (and so every process in the sandbox), removes the
// cgroup and the sandbox's directory. It is safe after a partial start.
func (s *Sandbox) destroy() error {
	if s.init != nil && s.init.Process != nil {
		s.init.Process.Kill()
		<-s.dead
	} else if s.c != nil {
		s.c.close()
	}
	s.dropStack()
	var first error
	if err := s.cg.destroy(); err != nil {
		first = err
	}
	if s.dir != "" {
		if err := RemoveAll(s.dir); err != nil && first == nil {
			first = fmt.Errorf("remove sandbox directory: %w", err)
		}
	}
	return first
}
