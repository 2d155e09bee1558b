package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Options configure a Runtime.
type Options struct {
	// Home is $CWM_HOME; run state lives in Home/run.
	Home string
	// Log receives debug and warning messages; nil discards them.
	Log *slog.Logger
	// Warm is how many closed sandboxes are kept, reset, for reuse by a
	// later New with the same configuration (default 8; negative disables).
	Warm int
	// WarmIdle is how long a warm sandbox is kept unused (default 30s).
	WarmIdle time.Duration
	// Rlimits lets the runtime start without usable cgroups, limiting
	// memory and processes per process with rlimits (also
	// CWM_LIMITS=rlimits). Without it such a host is refused, with what to
	// configure.
	Rlimits bool
}

// weakening turns measures of the sandbox off. Only the escape suite's
// controls use it, to show that a refusal comes from the measure under
// test and not from a missing path or a malformed call.
type weakening struct {
	noSeccomp bool // no system call filter
	noMasks   bool // /proc neither masked nor read-only
	hostEtc   bool // the host's /etc instead of the generated one
	allCaps   bool // commands keep every capability of the sandbox's root
}

// Runtime creates sandboxes and owns the state they leave on the host.
type Runtime struct {
	home     string
	run      string     // Home/run
	dirMu    sync.Mutex // guards dir and lock, made on first use
	dir      string     // Home/run/<this process>, made by runDir
	mnt      string     // Home/run/mnt: where each sandbox mounts its root tmpfs, in its own namespace
	lock     *os.File
	log      *slog.Logger
	cg       cgroups
	ids      IDBlock  // host ids of sandbox ids 0..ids.Count-1
	skel     string   // host base: the skeleton layer
	etc      string   // host base: the generated /etc
	hostFS   []string // host base: host directories bound at the same path
	devNull  *os.File
	uid, gid int

	// weak turns measures off, for the controls of the escape suite.
	weak weakening

	// upperOnDisk keeps upper layers in the run directory rather than in
	// tmpfs mounts: this kernel's tmpfs lacks the user.* extended
	// attributes overlayfs needs (before Linux 6.6). The disk limit then
	// does not hold.
	upperOnDisk bool

	warm     int
	warmIdle time.Duration

	frozen layers // the checkpoints' frozen layers (checkpoint.go)

	warnedMu sync.Mutex      // guards warned
	warned   map[string]bool // directories logged as shown without an idmap

	// mu guards idle, live, spares, making and closed.
	mu     sync.Mutex
	idle   map[string][]*Sandbox // config key -> reset sandboxes
	live   map[*Sandbox]bool
	spares int                    // checkpoints' spare branches, made or in the making (spare.go)
	making map[chan struct{}]bool // spare branches in the making, closed when made
	closed bool
	stop   chan struct{}
	wg     sync.WaitGroup
}

// NewRuntime prepares Home/run, removes what dead cwm processes left there
// (processes, cgroups, directories) and detects the cgroup controllers.
func NewRuntime(opts Options) (_ *Runtime, err error) {
	if opts.Home == "" {
		return nil, errors.New("sandbox runtime: no home directory")
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rt := &Runtime{home: opts.Home, log: log, warm: opts.Warm, warmIdle: opts.WarmIdle,
		idle: map[string][]*Sandbox{}, live: map[*Sandbox]bool{}, making: map[chan struct{}]bool{}, stop: make(chan struct{}),
		uid: os.Getuid(), gid: os.Getgid()}
	if rt.warm == 0 {
		rt.warm = 8
	}
	if rt.warmIdle == 0 {
		rt.warmIdle = 30 * time.Second
	}
	if rt.ids, err = hostIDBlock(rt.uid, rt.gid); err != nil {
		return nil, &ConfigError{Err: err}
	}
	if err := checkUserNamespaces(rt.uid); err != nil {
		return nil, &ConfigError{Err: err}
	}
	run := filepath.Join(opts.Home, "run")
	if err := os.MkdirAll(run, 0o700); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	if err := Reap(run, log); err != nil {
		log.Warn("removing stale sandbox state", "err", err)
	}
	// Every sandbox mounts its tmpfs root here, in a mount namespace of
	// its own, so one empty directory serves them all.
	rt.mnt = filepath.Join(run, "mnt")
	if err := os.Mkdir(rt.mnt, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	rt.run = run
	if rt.upperOnDisk = !tmpfsHasUserXattrs(); rt.upperOnDisk {
		log.Warn("this kernel's tmpfs has no user extended attributes (Linux 6.6 has them): upper layers stay on disk and the disk limit does not hold")
	}
	rt.cg = detectCgroups()
	if err := cgroupsRequired(rt.cg, rt.uid, opts.Rlimits || os.Getenv(LimitsEnv) == "rlimits"); err != nil {
		return nil, &ConfigError{Err: err}
	}
	if rt.cg.version == 0 {
		log.Debug("cgroups unavailable; memory and process limits use rlimits", "reason", rt.cg.reason)
	}
	reapStaleCgroups(rt.cg, log)
	if rt.skel, rt.hostFS, err = hostSkeleton(opts.Home); err != nil {
		return nil, fmt.Errorf("prepare host base: %w", err)
	}
	if rt.etc, err = hostEtc(opts.Home); err != nil {
		return nil, fmt.Errorf("prepare host base: %w", err)
	}
	if rt.devNull, err = os.Open(os.DevNull); err != nil {
		return nil, err
	}
	rt.wg.Add(1)
	go rt.janitor()
	return rt, nil
}

// runDir returns this process's run directory, making it (and taking its
// lock) the first time: sandboxes with an init keep their record and log
// there. A one-shot sandbox needs none, so a cwm that only runs those
// (cwm sandbox run) never makes one.
func (rt *Runtime) runDir() (string, error) {
	rt.dirMu.Lock()
	defer rt.dirMu.Unlock()
	if rt.dir != "" {
		return rt.dir, nil
	}
	name := fmt.Sprintf("p%d-%s", os.Getpid(), randomHex(6))
	dir := filepath.Join(rt.run, name)
	// The directory is made under a name Reap passes over, locked, and
	// only then given its name: Reap in another cwm starting at the same
	// moment (Slurm array tasks sharing a node's home) never sees it
	// without its lock held, which it would take for a dead owner's.
	tmp := filepath.Join(rt.run, newRunPrefix+name)
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return "", fmt.Errorf("create run directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(tmp, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		// The lock is held for the life of this process: Reap in another
		// cwm knows this directory is live exactly when it cannot take it.
		if err = unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			lock.Close()
			err = fmt.Errorf("lock run directory: %w", err)
		}
	}
	if err == nil {
		if err = os.Rename(tmp, dir); err != nil {
			lock.Close()
			err = fmt.Errorf("create run directory: %w", err)
		}
	}
	if err != nil {
		RemoveAll(tmp)
		return "", err
	}
	rt.dir, rt.lock = dir, lock
	return dir, nil
}

// newRunPrefix names a run directory being made (runDir): Reap leaves
// it to its maker, unless it is older than staleNewRun (its maker died
// between making and naming it).
const (
	newRunPrefix = ".new-"
	staleNewRun  = time.Hour
)

// warnUnmapped logs, once per directory, that a read-only directory could
// not be idmapped (its filesystem does not support it): inside, its files
// belong to nobody.
func (rt *Runtime) warnUnmapped(dir string) {
	rt.warnedMu.Lock()
	defer rt.warnedMu.Unlock()
	if rt.warned[dir] {
		return
	}
	if rt.warned == nil {
		rt.warned = map[string]bool{}
	}
	rt.warned[dir] = true
	rt.log.Warn("filesystem cannot be idmapped: its files belong to nobody inside sandboxes", "dir", dir)
}

// protectFromOOM takes pid (a sandbox's first process, which cwm needs)
// out of the OOM killer's choices. It writes the legacy oom_adj, which,
// unlike oom_score_adj written with CAP_SYS_RESOURCE, does not lower the
// floor the process's children inherit: commands can raise their score
// again (they do, to the maximum) but not lower it below 0.
//
// Lowering a score needs CAP_SYS_RESOURCE: an ordinary user's cwm cannot,
// and its init stays an OOM candidate after the commands (which have the
// maximum score).
func protectFromOOM(pid int) error {
	err := os.WriteFile(fmt.Sprintf("/proc/%d/oom_adj", pid), []byte("-17"), 0)
	if err != nil && !errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("protect sandbox process %d from the OOM killer: %w", pid, err)
	}
	return nil
}

// tmpfsHasUserXattrs reports whether the kernel is Linux 6.6 or later,
// whose tmpfs keeps user.* extended attributes.
func tmpfsHasUserXattrs() bool { return kernelAtLeast(6, 6) }

// kernelAtLeast reports whether the running kernel's release is at least
// major.minor.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var ma, mi int
	fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi)
	return ma > major || ma == major && mi >= minor
}

// IDs is the block of host ids the runtime's sandboxes run as.
func (rt *Runtime) IDs() IDBlock { return rt.ids }

// Cgroups reports which cgroup version limits memory and processes, or why
// none does.
func (rt *Runtime) Cgroups() (version int, reason string) { return rt.cg.version, rt.cg.reason }

// Close closes every sandbox of the runtime, warm or in use, and removes
// the runtime's run directory.
func (rt *Runtime) Close() error {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil
	}
	rt.closed = true
	var all []*Sandbox
	for _, list := range rt.idle {
		all = append(all, list...)
	}
	rt.idle = nil
	for s := range rt.live {
		all = append(all, s)
	}
	rt.mu.Unlock()
	close(rt.stop)
	rt.wg.Wait()
	var first error
	for _, s := range all {
		if err := s.destroy(); err != nil && first == nil {
			first = err
		}
	}
	rt.devNull.Close()
	rt.dirMu.Lock()
	defer rt.dirMu.Unlock()
	if rt.dir != "" {
		dropAllLayers(rt.dir)
		if err := RemoveAll(rt.dir); err != nil && first == nil {
			first = err
		}
		rt.lock.Close()
	}
	return first
}

// janitor closes warm sandboxes that stayed unused for too long.
func (rt *Runtime) janitor() {
	defer rt.wg.Done()
	t := time.NewTicker(rt.warmIdle / 2)
	defer t.Stop()
	for {
		select {
		case <-rt.stop:
			return
		case <-t.C:
		}
		var old []*Sandbox
		rt.mu.Lock()
		for k, list := range rt.idle {
			keep := list[:0]
			for _, s := range list {
				if time.Since(s.idleSince) > rt.warmIdle {
					old = append(old, s)
				} else {
					keep = append(keep, s)
				}
			}
			if len(keep) == 0 {
				delete(rt.idle, k)
			} else {
				rt.idle[k] = keep
			}
		}
		rt.mu.Unlock()
		for _, s := range old {
			s.destroy()
		}
	}
}

// New returns a sandbox for cfg: a warm one reset from an earlier Close when
// one is available, otherwise a new one.
func (rt *Runtime) New(ctx context.Context, cfg Config) (*Sandbox, error) {
	cfg, err := rt.check(cfg)
	if err != nil {
		return nil, err
	}
	key := cfg.key()
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil, errors.New("sandbox runtime is closed")
	}
	rt.mu.Unlock()
	if s := rt.takeWarm(key); s != nil {
		if err := rt.adopt(s); err != nil {
			go s.destroy()
			return nil, err
		}
		s.cfg = cfg // same filesystem and limits; env and workdir may differ
		s.closed.Store(false)
		return s, nil
	}
	s, err := rt.start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := rt.adopt(s); err != nil {
		go s.destroy()
		return nil, err
	}
	return s, nil
}

// Prewarm makes sure the warm pool holds a sandbox for cfg: when fewer
// than want are idle for it, it starts a new one and puts it there,
// within the pool's size. Unlike New then Close, it never takes the idle
// sandbox someone else is about to take.
func (rt *Runtime) Prewarm(ctx context.Context, cfg Config, want int) error {
	cfg, err := rt.check(cfg)
	if err != nil {
		return err
	}
	key := cfg.key()
	rt.mu.Lock()
	enough := rt.closed || rt.warm <= 0 || len(rt.idle[key]) >= want
	rt.mu.Unlock()
	if enough {
		return nil
	}
	s, err := rt.start(ctx, cfg)
	if err != nil {
		return err
	}
	rt.mu.Lock()
	if rt.closed || rt.idleCount() >= rt.warm || len(rt.idle[key]) >= want {
		rt.mu.Unlock()
		return s.destroy()
	}
	s.closed.Store(true)
	s.idleSince = time.Now()
	rt.idle[key] = append(rt.idle[key], s)
	rt.mu.Unlock()
	return nil
}

// takeWarm returns a warm sandbox for the configuration key, its reset
// for reuse finished, or nil.
func (rt *Runtime) takeWarm(key string) *Sandbox {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for len(rt.idle[key]) > 0 {
		list := rt.idle[key]
		i := readyIdle(list)
		s := list[i]
		rt.idle[key] = slices.Delete(list, i, i+1)
		if s.recycled != nil {
			rt.mu.Unlock()
			<-s.recycled
			rt.mu.Lock()
			s.recycled = nil
			if s.recycleErr != nil {
				go s.destroy()
				continue
			}
		}
		return s
	}
	return nil
}

// idleCount is how many warm sandboxes the pool holds, of every
// configuration. rt.mu must be held.
func (rt *Runtime) idleCount() int {
	n := 0
	for _, l := range rt.idle {
		n += len(l)
	}
	return n
}

// readyIdle picks from list, the idle sandboxes of one key, the most
// recently released one whose reset is done, so that a sandbox taken
// while others still reset does not wait; the most recent one when
// none is done.
func readyIdle(list []*Sandbox) int {
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].recycled == nil {
			return i
		}
		select {
		case <-list[i].recycled:
			return i
		default:
		}
	}
	return len(list) - 1
}

// adopt counts s among the runtime's live sandboxes, which Close destroys.
func (rt *Runtime) adopt(s *Sandbox) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		return errors.New("sandbox runtime is closed")
	}
	rt.live[s] = true
	return nil
}

// check normalizes cfg and checks it against what this host can enforce.
func (rt *Runtime) check(cfg Config) (Config, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return cfg, &ConfigError{Err: err}
	}
	if rt.cg.version == 0 && cfg.Limits.Memory < MinRlimitMemory {
		return cfg, &ConfigError{Err: fmt.Errorf("invalid memory limit %d bytes: without cgroups (%s) it is a per-process rlimit that sandbox init is subject to as well, and must be at least %d MiB",
			cfg.Limits.Memory, rt.cg.reason, MinRlimitMemory>>20)}
	}
	return cfg, nil
}

// release takes back a closed sandbox: keep it warm if there is room,
// otherwise destroy it.
func (rt *Runtime) release(s *Sandbox, reusable bool) error {
	rt.mu.Lock()
	delete(rt.live, s)
	keep := reusable && !rt.closed && rt.warm > 0 && rt.idleCount() < rt.warm
	if keep && !s.busy() {
		// Every command has been waited for, so init has already killed
		// all the sandbox's processes: nothing of it runs any more. The
		// reset for its next user goes on in the background, and New
		// waits for it if it takes this sandbox before it is done.
		s.recycled = make(chan struct{})
		s.idleSince = time.Now()
		rt.idle[s.key] = append(rt.idle[s.key], s)
		rt.mu.Unlock()
		go func() {
			s.recycleErr = s.recycle()
			close(s.recycled)
		}()
		return nil
	}
	rt.mu.Unlock()
	if keep {
		if err := s.recycle(); err == nil {
			rt.mu.Lock()
			if !rt.closed {
				s.idleSince = time.Now()
				rt.idle[s.key] = append(rt.idle[s.key], s)
				rt.mu.Unlock()
				return nil
			}
			rt.mu.Unlock()
		}
	}
	return s.destroy()
}

// MinRlimitMemory is the smallest memory limit a runtime without cgroups
// accepts: there the limit is each process's RLIMIT_DATA, inherited from
// sandbox init, whose own private memory is some 80 MiB.
const MinRlimitMemory = 256 << 20

// ConfigError is an invalid sandbox configuration: a missing layer, a bad
// limit. Commands report it as a usage error.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// RemoveAll is os.RemoveAll that also removes directories left without
// permissions (overlayfs leaves its work directory mode 000, layers are
// read-only).
func RemoveAll(p string) error {
	err := os.RemoveAll(p)
	if err == nil {
		return nil
	}
	filepath.Walk(p, func(path string, info os.FileInfo, err error) error {
		if info != nil && info.IsDir() {
			os.Chmod(path, 0o700)
		}
		return nil
	})
	return os.RemoveAll(p)
}

// Reap removes what dead cwm processes left in the run directory run: the
// sandboxes' processes, their cgroups and their directories. A directory is
// dead when nobody holds its lock.
func Reap(run string, log *slog.Logger) error {
	ents, err := os.ReadDir(run)
	if err != nil {
		return err
	}
	var first error
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), newRunPrefix) {
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleNewRun {
				RemoveAll(filepath.Join(run, e.Name()))
			}
			continue
		}
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "p") {
			continue
		}
		dir := filepath.Join(run, e.Name())
		lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR, 0)
		if err == nil {
			if unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
				lock.Close()
				continue // its owner is alive
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			continue
		}
		subs, _ := os.ReadDir(dir)
		for _, s := range subs {
			if s.IsDir() {
				reapSandbox(filepath.Join(dir, s.Name()), log)
			}
		}
		// Checkpoints' frozen layers are mounts: gone before their
		// directories are.
		dropAllLayers(dir)
		// A cgroup made just before the crash may be missing from the
		// records; its name carries the dead process's pid and start
		// time. A live process that now has that pid keeps its own.
		if pid, _, ok := strings.Cut(strings.TrimPrefix(e.Name(), "p"), "-"); ok {
			reapCgroupsOf(detectCgroups(), func(name string) bool {
				return strings.HasPrefix(name, "cwm-"+pid+"-") && staleCgroup(name)
			}, log)
		}
		if err := RemoveAll(dir); err != nil && first == nil {
			first = err
		}
		if lock != nil {
			lock.Close()
		}
		log.Debug("reaped stale sandbox state", "dir", dir)
	}
	return first
}

// sandboxRecord is what a sandbox's directory says about it, for Reap.
type sandboxRecord struct {
	InitPid   int      `json:"init_pid"`
	InitStart uint64   `json:"init_start"`
	Cgroups   []string `json:"cgroups"`
}

func reapSandbox(dir string, log *slog.Logger) {
	b, err := os.ReadFile(filepath.Join(dir, "sandbox.json"))
	if err != nil {
		return
	}
	var rec sandboxRecord
	if json.Unmarshal(b, &rec) != nil {
		return
	}
	if rec.InitPid > 0 && procStart(rec.InitPid) == rec.InitStart {
		syscall.Kill(rec.InitPid, syscall.SIGKILL)
		// Killing a pid namespace's init takes its processes along, but
		// not instantly; the cgroups cannot go before they have.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if procStart(rec.InitPid) != rec.InitStart || procState(rec.InitPid) == 'Z' {
				break
			}
		}
	}
	if err := removeCgroups(rec.Cgroups); err != nil {
		log.Warn("reap cgroup", "err", err)
	}
}

// procState returns the state letter of pid (R, S, Z, ...), 0 if gone.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, st, _ := parseStat(b)
	return st
}

// procStart returns the start time of pid (clock ticks since boot), which
// with the pid identifies a process; 0 if it does not exist.
func procStart(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}
