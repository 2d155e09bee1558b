package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Inside the sandbox's mount namespace init's root is a small tmpfs laid out
// as:
//
//	/l0 .. /lN    the lower layers, bound read-only (topmost first)
//	/h/usr, ...   host system directories, bound read-only (host base only)
//	/state        the sandbox's run state (g<N>/upper, g<N>/work), read-write
//	/proc, /dev   the sandbox's procfs and a minimal /dev
//	/root         the overlay that commands see as / (after a reset or a
//	              checkpoint, /r<N>: generation N's overlay, see swap)
//
// Commands run chrooted to that overlay without CAP_SYS_CHROOT, CAP_SYS_ADMIN or
// CAP_SYS_PTRACE, and cannot create user namespaces, so they cannot leave
// it. The host's own filesystem is not mounted anywhere in the namespace.

var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// keptCaps are the capabilities commands keep (Docker's default set minus
// CAP_SYS_CHROOT). Everything else is dropped from the bounding set.
var keptCaps = map[int]bool{
	unix.CAP_CHOWN: true, unix.CAP_DAC_OVERRIDE: true, unix.CAP_FOWNER: true,
	unix.CAP_FSETID: true, unix.CAP_KILL: true, unix.CAP_SETGID: true,
	unix.CAP_SETUID: true, unix.CAP_SETPCAP: true, unix.CAP_NET_BIND_SERVICE: true,
	unix.CAP_NET_RAW: true, unix.CAP_MKNOD: true, unix.CAP_AUDIT_WRITE: true,
	unix.CAP_SETFCAP: true,
}

// initCaps are the capabilities, in the sandbox's namespaces only, that
// init keeps across its exec when it starts as a uid the sandbox does not
// map: to build the sandbox (mounts, hostname, loopback, limits), become
// the sandbox's root, drop the bounding set, chroot commands, kill and
// signal them whatever their uid, and read and write their files.
var initCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETUID, unix.CAP_SETGID,
	unix.CAP_SETPCAP, unix.CAP_SYS_CHROOT, unix.CAP_KILL, unix.CAP_DAC_OVERRIDE,
	unix.CAP_DAC_READ_SEARCH, unix.CAP_FOWNER, unix.CAP_CHOWN, unix.CAP_SYS_RESOURCE}

// build makes the sandbox from its set-up message and the descriptors
// passed with it (see setupMsg).
func (in *initState) build(s *setupMsg, files []*os.File) error {
	defer closeAll(files)
	in.setup = s
	for _, src := range s.mounts() {
		if src.FD >= 0 {
			if src.FD >= len(files) {
				return fmt.Errorf("set-up names descriptor %d of %d", src.FD, len(files))
			}
			src.FD = int(files[src.FD].Fd())
		}
	}
	var tasks []*os.File
	for _, i := range s.Tasks {
		if i < 0 || i >= len(files) {
			return fmt.Errorf("set-up names descriptor %d of %d", i, len(files))
		}
		tasks = append(tasks, files[i])
	}
	if err := scratchPlan(s).run(); err != nil {
		return err
	}
	if os.Getuid() != 0 {
		// Started as cwm's uid, unmapped here (see initCaps).
		if err := becomeRoot(); err != nil {
			return err
		}
	}
	if err := setupPlan(s).run(); err != nil {
		return err
	}
	if err := in.startForker(tasks, !s.NoSeccomp); err != nil {
		return err
	}
	// Not dumpable: commands cannot ptrace init or open /proc/1/mem.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("set non-dumpable: %w", err)
	}
	in.gen = s.Gen
	if err := tmpfsPlan(s, s.Gen).run(); err != nil {
		return err
	}
	return overlayPlan(s, s.Gen, nil, "/root").run()
}

// becomeRoot makes every thread of init the sandbox's root.
func becomeRoot() error {
	if err := syscall.Setresgid(0, 0, 0); err != nil {
		return fmt.Errorf("become the sandbox's root: %w", err)
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("become the sandbox's root: %w", err)
	}
	if err := syscall.Setresuid(0, 0, 0); err != nil {
		return fmt.Errorf("become the sandbox's root: %w", err)
	}
	return nil
}

// forkReq asks the forker thread to start a command.
type forkReq struct {
	path string
	argv []string
	attr *syscall.ProcAttr
	done chan forkRes
}

type forkRes struct {
	pid int
	err error
}

// startForker starts the one thread that forks commands. Capabilities,
// including the bounding set, cgroup v1 membership and seccomp filters
// belong to a thread, not a process: the forker moves itself into the
// sandbox's cgroups (tasks), drops the capabilities commands do not keep
// and installs the system call filter, and forks only from there, while
// init's other threads stay outside the cgroups, able to mount.
func (in *initState) startForker(tasks []*os.File, filter bool) error {
	in.forks = make(chan forkReq)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is the forker for life
		if unix.Gettid() == unix.Getpid() {
			// The main thread stands for the whole process in a cgroup's
			// process list and in the OOM killer's choice: hand over to
			// another thread (this one stays locked, so the new goroutine
			// cannot run here) and leave this one when it has taken over.
			go in.forker(tasks, filter, errc)
			return
		}
		in.forker(tasks, filter, errc)
	}()
	return <-errc
}

func (in *initState) forker(tasks []*os.File, filter bool, errc chan<- error) {
	runtime.LockOSThread()
	for _, f := range tasks {
		if _, err := f.Write([]byte("0")); err != nil {
			errc <- fmt.Errorf("enter the sandbox's cgroup: %w", err)
			return
		}
	}
	caps := &plan{}
	if !in.setup.KeepCaps {
		caps.dropCaps()
	}
	if err := caps.run(); err != nil {
		errc <- err
		return
	}
	if err := clearInheritedCaps(); err != nil {
		errc <- err
		return
	}
	if filter {
		if err := installSeccomp(); err != nil {
			errc <- err
			return
		}
	}
	errc <- nil
	for r := range in.forks {
		pid, err := syscall.ForkExec(r.path, r.argv, r.attr)
		if err == nil {
			// Commands are the OOM killer's first choice, before init and
			// anything outside the sandbox.
			os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid), []byte("1000"), 0)
		}
		r.done <- forkRes{pid, err}
	}
}

// clearInheritedCaps empties the calling thread's ambient and inheritable
// capabilities, which init was started with (initCaps): a command the
// sandbox's root execs would otherwise get them back whatever the bounding
// set says.
func clearInheritedCaps() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear inheritable capabilities: %w", err)
	}
	return nil
}

func (in *initState) forkExec(path string, argv []string, attr *syscall.ProcAttr) (int, error) {
	done := make(chan forkRes, 1)
	in.forks <- forkReq{path, argv, attr, done}
	r := <-done
	return r.pid, r.err
}

// prepare mounts generation gen's tmpfs for a reset to mount, its upper
// layer a copy of the one passed (a directory, Clone's source).
func (in *initState) prepare(gen int, files []*os.File) error {
	defer closeAll(files)
	if len(files) != 1 {
		return fmt.Errorf("malformed prepare request")
	}
	in.startMu.Lock()
	defer in.startMu.Unlock()
	in.mu.Lock()
	cur := in.gen
	in.mu.Unlock()
	g := genDir(gen)
	if gen == cur || exists(g) {
		return fmt.Errorf("generation %d exists", gen)
	}
	if err := tmpfsPlan(in.setup, gen).run(); err != nil {
		return err
	}
	dst, err := unix.Open(g+"/upper", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		err = copyUpper(int(files[0].Fd()), dst, nil)
		unix.Close(dst)
	}
	if err != nil {
		if in.setup.State == nil {
			unix.Unmount(g, unix.MNT_DETACH)
		}
		RemoveAll(g)
		return err
	}
	return nil
}

// reset kills every command and swaps in a fresh upper layer, generation
// gen (prepared beforehand, and perhaps filled by the host, or made now).
// It returns the generation mounted: the current one when nothing was
// written to it and gen was not prepared. The old generation's tmpfs is
// unmounted after the reply (see swap), so a reset costs the same however
// much was written.
func (in *initState) reset(gen int, recycle bool) (int, error) {
	in.killAll()
	if recycle {
		removeSysVIPC()
	}
	in.startMu.Lock()
	defer in.startMu.Unlock()
	in.mu.Lock()
	cur := in.gen
	in.mu.Unlock()
	prepared := gen != cur && exists(genDir(gen))
	if !prepared && len(in.frozen) == 0 && isEmptyDir(genDir(cur)+"/upper") && isEmptyDir(in.rootDir()+"/dev/shm") {
		// Nothing was written: the mounted overlay already is a fresh one.
		return cur, nil
	}
	if gen == cur {
		return cur, fmt.Errorf("reset to the current generation %d", gen)
	}
	if !prepared {
		if err := tmpfsPlan(in.setup, gen).run(); err != nil {
			return cur, err
		}
	}
	return gen, in.swap(cur, gen, nil, false)
}

// afterReply runs what the last swap left to do: tearing down the old
// overlay and what it alone used. That costs time in proportion to the
// names cached in it, so it runs once the reply has gone, and before the
// next request is handled: the sandbox's next command waits for it rather
// than share the processor with it. Except for a command the host sent
// right behind the swap, there before the reply went (a branch's bash
// session, Sandbox.BranchShell): its process is started first, and makes
// its start while the old overlay goes. Nothing of that overlay is in its
// way: the command sees the new one, and no process is left in the old.
// next is a request read here to learn that, for the caller to handle.
func (in *initState) afterReply() (next *request, files []*os.File, err error) {
	f := in.teardown
	if f == nil {
		return nil, nil, nil
	}
	in.teardown = nil
	req := new(request)
	files, ok, err := in.c.tryRecv(req)
	if ok && req.Op == "exec" {
		started := make(chan struct{})
		go in.exec(*req, files, started)
		<-started
		f()
		return nil, nil, nil
	}
	f()
	if !ok {
		return nil, nil, err
	}
	return req, files, nil
}

// swap mounts the overlay of generation gen (its tmpfs made) over the
// frozen layers frozen in place of the current one, generation cur. With
// keep, cur's tmpfs stays mounted (a checkpoint froze it); otherwise it
// goes, and so do the frozen layers the new overlay no longer stands on,
// after the reply (afterReply). Call with startMu held and every command
// killed.
func (in *initState) swap(cur, gen int, frozen []frozenLayer, keep bool) error {
	// Tearing down an overlay costs time in proportion to what was cached
	// in it, and even detaching one waits for an RCU grace period (in
	// namespace_unlock): the new overlay is mounted at a path of its own,
	// and the old one detached after the reply.
	oldRoot := in.rootDir()
	newRoot := fmt.Sprintf("/r%d", gen)
	if err := unix.Mkdir(newRoot, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", newRoot, err)
	}
	if err := overlayPlan(in.setup, gen, lowerDirsOf(frozen), newRoot).run(); err != nil {
		unix.Unmount(newRoot, unix.MNT_DETACH)
		unix.Rmdir(newRoot)
		return err
	}
	in.mu.Lock()
	in.gen = gen
	in.root = newRoot
	old := in.frozen
	in.frozen = frozen
	in.mu.Unlock()
	in.teardown = func() {
		if unix.Unmount(oldRoot, unix.MNT_DETACH) == nil && oldRoot != "/root" {
			unix.Rmdir(oldRoot)
		}
		if !keep {
			in.dropMount(genDir(cur))
		}
		for _, l := range old {
			if !slices.Contains(frozen, l) {
				in.dropMount(l.dir)
			}
		}
	}
	return nil
}

// rootDir is where the overlay commands see as / is mounted: /root, then
// a path of each generation's own (swap).
func (in *initState) rootDir() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.root == "" {
		return "/root"
	}
	return in.root
}

// dropMount unmounts the tmpfs at d (an upper layer's generation or a
// frozen layer) and removes its mount point.
func (in *initState) dropMount(d string) {
	if in.setup.State != nil {
		RemoveAll(d)
	} else if unix.Unmount(d, unix.MNT_DETACH) == nil {
		unix.Rmdir(d)
	}
}

func isEmptyDir(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) == 0
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// removeSysVIPC deletes the System V shared memory, semaphores and message
// queues commands created, so a recycled sandbox starts without them.
func removeSysVIPC() {
	for _, kind := range []string{"shm", "sem", "msg"} {
		b, err := os.ReadFile("/proc/sysvipc/" + kind)
		if err != nil {
			continue
		}
		lines := strings.Split(string(b), "\n")
		for _, line := range lines[1:] {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			var id int
			fmt.Sscan(f[1], &id)
			switch kind {
			case "shm":
				unix.SysvShmCtl(id, unix.IPC_RMID, nil)
			case "sem":
				unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), 0, unix.IPC_RMID, 0, 0, 0)
			case "msg":
				unix.Syscall(unix.SYS_MSGCTL, uintptr(id), unix.IPC_RMID, 0)
			}
		}
	}
}

// openRoot resolves p inside the sandbox's root: ".." and symlinks, absolute
// or not, cannot leave it.
func (in *initState) openRoot(p string, flags int, mode uint32) (*os.File, error) {
	root, err := unix.Open(in.rootDir(), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	how := &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode),
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(root, p, how)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// commandPaths lists where name may be found, in the order execvp would
// try: name itself when it has a slash, else each directory of PATH.
func commandPaths(name string, env []string, dir string) []string {
	if strings.Contains(name, "/") {
		return []string{name}
	}
	pathEnv := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	var out []string
	for _, d := range strings.Split(pathEnv, ":") {
		if d == "" {
			d = "."
		}
		p := path.Join(d, name)
		if !path.IsAbs(p) {
			p = path.Join(dir, p)
		}
		out = append(out, p)
	}
	return out
}

// lookPath finds an executable the way execvp would, but inside the sandbox.
func (in *initState) lookPath(name string, env []string, dir string) (string, error) {
	if d, err := in.openRoot(dir, unix.O_PATH|unix.O_DIRECTORY, 0); err != nil {
		return "", fmt.Errorf("workdir %s: %w", dir, unwrapPath(err))
	} else {
		d.Close()
	}
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, p := range commandPaths(name, env, dir) {
		f, err := in.openRoot(p, unix.O_PATH, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		err = unix.Fstat(int(f.Fd()), &st)
		f.Close()
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found", name)
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (in *initState) readFile(req request, files []*os.File) {
	defer closeAll(files)
	if len(files) != 1 {
		in.replyErr(req.ID, fmt.Errorf("malformed readfile request"))
		return
	}
	f, err := in.openRoot(req.Path, unix.O_RDONLY, 0)
	if err != nil {
		in.replyErr(req.ID, err)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.IsDir() {
		if err == nil {
			err = &os.PathError{Op: "read", Path: req.Path, Err: syscall.EISDIR}
		}
		in.replyErr(req.ID, err)
		return
	}
	if req.Limit > 0 && st.Size() > req.Limit {
		in.replyErr(req.ID, fmt.Errorf("%s: %d bytes exceeds the limit of %d", req.Path, st.Size(), req.Limit))
		return
	}
	in.reply(reply{ID: req.ID, Op: "ok", Size: st.Size()})
	io.Copy(files[0], f)
}

func (in *initState) writeFile(req request, files []*os.File) {
	defer closeAll(files)
	if len(files) != 1 {
		in.replyErr(req.ID, fmt.Errorf("malformed writefile request"))
		return
	}
	flags := unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC
	if req.Reason == "create" {
		flags = unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL
	}
	mode := req.Mode
	if mode == 0 {
		mode = 0o644
	}
	f, err := in.openRoot(req.Path, flags, mode)
	if err != nil {
		io.Copy(io.Discard, files[0])
		in.replyErr(req.ID, err)
		return
	}
	_, err = io.Copy(f, files[0])
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	in.replyErr(req.ID, err)
}

func (in *initState) stat(req request) {
	f, err := in.openRoot(req.Path, unix.O_PATH, 0)
	if err != nil {
		in.replyErr(req.ID, err)
		return
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		in.replyErr(req.ID, err)
		return
	}
	in.reply(reply{ID: req.ID, Op: "ok", Size: st.Size, IsDir: st.Mode&unix.S_IFMT == unix.S_IFDIR, Mode: st.Mode})
}
