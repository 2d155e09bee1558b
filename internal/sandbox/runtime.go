package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"
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
}

// Runtime creates sandboxes and owns the state they leave on the host.
type Runtime struct {
	home     string
	dir      string // Home/run/<this process>
	mnt      string // Home/run/mnt: where each sandbox mounts its root tmpfs, in its own namespace
	lock     *os.File
	log      *slog.Logger
	cg       cgroups
	skel     string // host-base skeleton
	hostFS   []string
	devNull  *os.File
	uid, gid int

	warm     int
	warmIdle time.Duration

	mu     sync.Mutex
	idle   map[string][]*Sandbox // config key -> reset sandboxes
	live   map[*Sandbox]bool
	closed bool
	stop   chan struct{}
	wg     sync.WaitGroup
}

// NewRuntime prepares Home/run, removes what dead cwm processes left there
// (processes, cgroups, directories) and detects the cgroup controllers.
func NewRuntime(opts Options) (*Runtime, error) {
	if opts.Home == "" {
		return nil, errors.New("sandbox runtime: no home directory")
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rt := &Runtime{home: opts.Home, log: log, warm: opts.Warm, warmIdle: opts.WarmIdle,
		idle: map[string][]*Sandbox{}, live: map[*Sandbox]bool{}, stop: make(chan struct{}),
		uid: os.Getuid(), gid: os.Getgid()}
	if rt.warm == 0 {
		rt.warm = 8
	}
	if rt.warmIdle == 0 {
		rt.warmIdle = 30 * time.Second
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
	rt.dir = filepath.Join(run, fmt.Sprintf("p%d-%s", os.Getpid(), randomHex(6)))
	if err := os.Mkdir(rt.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(rt.dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	// The lock is held for the life of this process: Reap in another cwm
	// knows this directory is live exactly when it cannot take the lock.
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("lock run directory: %w", err)
	}
	rt.lock = lock
	rt.cg = detectCgroups()
	if rt.cg.version == 0 {
		log.Debug("cgroups unavailable; memory and process limits use rlimits", "reason", rt.cg.reason)
	}
	if rt.devNull, err = os.Open(os.DevNull); err != nil {
		return nil, err
	}
	if rt.skel, rt.hostFS, err = hostSkeleton(opts.Home); err != nil {
		return nil, fmt.Errorf("prepare host base: %w", err)
	}
	rt.wg.Add(1)
	go rt.janitor()
	return rt, nil
}

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
	if err := RemoveAll(rt.dir); err != nil && first == nil {
		first = err
	}
	rt.lock.Close()
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
	for len(rt.idle[key]) > 0 {
		list := rt.idle[key]
		s := list[len(list)-1]
		rt.idle[key] = list[:len(list)-1]
		rt.mu.Unlock()
		if s.recycled != nil {
			<-s.recycled
			s.recycled = nil
			if s.recycleErr != nil {
				go s.destroy()
				rt.mu.Lock()
				continue
			}
		}
		if err := rt.adopt(s); err != nil {
			go s.destroy()
			return nil, err
		}
		s.cfg = cfg // same filesystem and limits; env and workdir may differ
		s.closed.Store(false)
		return s, nil
	}
	rt.mu.Unlock()
	s, err := rt.start(ctx, cfg, nil)
	if err != nil {
		return nil, err
	}
	if err := rt.adopt(s); err != nil {
		go s.destroy()
		return nil, err
	}
	return s, nil
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
	n := 0
	for _, l := range rt.idle {
		n += len(l)
	}
	keep := reusable && !rt.closed && rt.warm > 0 && n < rt.warm
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

// hostSkeleton makes (once) the lowest layer of the host base: an almost
// empty root with mount points for the host's system directories and the
// same /bin, /lib and /sbin links as the host.
func hostSkeleton(home string) (string, []string, error) {
	var hostDirs []string
	type entry struct {
		name, link string
		mode       os.FileMode
	}
	entries := []entry{{"proc", "", 0o555}, {"dev", "", 0o755}, {"tmp", "", 0o1777},
		{"root", "", 0o700}, {"home", "", 0o755}, {"run", "", 0o755}, {"var", "", 0o755},
		{"var/tmp", "", 0o1777}, {"mnt", "", 0o755}, {"opt", "", 0o755}, {"srv", "", 0o755},
		{"sys", "", 0o555}, {"usr", "", 0o755}, {"etc", "", 0o755}}
	hostDirs = append(hostDirs, "/usr", "/etc")
	for _, d := range []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"} {
		fi, err := os.Lstat("/" + d)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink("/" + d)
			if err != nil {
				return "", nil, err
			}
			entries = append(entries, entry{name: d, link: target})
		} else if fi.IsDir() {
			entries = append(entries, entry{name: d, mode: 0o755})
			hostDirs = append(hostDirs, "/"+d)
		}
	}
	h := fnv.New64a()
	for _, e := range entries {
		fmt.Fprintf(h, "%s\x00%s\x00%o\n", e.name, e.link, e.mode)
	}
	sum := h.Sum64()
	dir := filepath.Join(home, "base", "host-"+strconv.FormatUint(sum, 16))
	if _, err := os.Stat(dir); err == nil {
		return dir, hostDirs, nil
	}
	tmp, err := os.MkdirTemp(filepath.Join(home), ".skel-")
	if err != nil {
		if err := os.MkdirAll(home, 0o755); err != nil {
			return "", nil, err
		}
		if tmp, err = os.MkdirTemp(home, ".skel-"); err != nil {
			return "", nil, err
		}
	}
	os.Chmod(tmp, 0o755)
	for _, e := range entries {
		p := filepath.Join(tmp, e.name)
		if e.link != "" {
			if err := os.Symlink(e.link, p); err != nil {
				return "", nil, err
			}
			continue
		}
		if err := os.Mkdir(p, e.mode); err != nil {
			return "", nil, err
		}
		os.Chmod(p, e.mode) // umask
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		RemoveAll(tmp)
		if _, serr := os.Stat(dir); serr == nil {
			return dir, hostDirs, nil // another cwm made it first
		}
		return "", nil, err
	}
	return dir, hostDirs, nil
}

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
		// A cgroup made just before the crash may be missing from the
		// records; its name carries the dead process's pid.
		if pid, _, ok := strings.Cut(strings.TrimPrefix(e.Name(), "p"), "-"); ok {
			reapCgroups("cwm-"+pid+"-", log)
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

func reapCgroups(prefix string, log *slog.Logger) {
	cg := detectCgroups()
	for _, parent := range []string{cg.memory, cg.pids, cg.unified} {
		if parent == "" {
			continue
		}
		ents, _ := os.ReadDir(parent)
		var dirs []string
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
				dirs = append(dirs, filepath.Join(parent, e.Name()))
			}
		}
		if err := removeCgroups(dirs); err != nil {
			log.Warn("reap cgroup", "err", err)
		}
	}
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
