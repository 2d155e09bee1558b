package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
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
//	/root         the overlay that commands see as /
//
// Commands run chrooted to /root without CAP_SYS_CHROOT, CAP_SYS_ADMIN or
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

func (in *initState) build(s *setupMsg) error {
	in.setup = s
	if err := setupPlan(s).run(); err != nil {
		return err
	}
	if err := in.startForker(); err != nil {
		return err
	}
	// Not dumpable: commands cannot ptrace init or open /proc/1/mem.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("set non-dumpable: %w", err)
	}
	in.gen = s.Gen
	return in.mountGen(s.Gen)
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
// including the bounding set, belong to a thread, not a process; dropping
// them on this thread alone, and forking only from it, leaves init's other
// threads able to mount while every command starts without them.
func (in *initState) startForker() error {
	in.forks = make(chan forkReq)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is the forker for life
		caps := &plan{}
		caps.dropCaps()
		if err := caps.run(); err != nil {
			errc <- err
			return
		}
		errc <- nil
		for r := range in.forks {
			pid, err := syscall.ForkExec(r.path, r.argv, r.attr)
			r.done <- forkRes{pid, err}
		}
	}()
	return <-errc
}

func (in *initState) forkExec(path string, argv []string, attr *syscall.ProcAttr) (int, error) {
	done := make(chan forkRes, 1)
	in.forks <- forkReq{path, argv, attr, done}
	r := <-done
	return r.pid, r.err
}

// mountGen mounts generation gen of the overlay at /root (see genPlan).
func (in *initState) mountGen(gen int) error { return genPlan(in.setup, gen).run() }

// reset kills every command and swaps in a fresh upper layer (generation
// gen, which the host may have filled beforehand). The old generation is
// removed in the background, so a reset costs the same however much was
// written.
func (in *initState) reset(gen int, recycle bool) error {
	in.killAll()
	if recycle {
		removeSysVIPC()
	}
	in.startMu.Lock()
	defer in.startMu.Unlock()
	in.mu.Lock()
	cur := in.gen
	in.mu.Unlock()
	if gen == cur+1 && isEmptyDir(fmt.Sprintf("/state/g%d/upper", cur)) && isEmptyDir("/root/dev/shm") &&
		!exists(fmt.Sprintf("/state/g%d", gen)) {
		// Nothing was written: the mounted overlay already is a fresh
		// one. Renaming the generation keeps the host's view in step.
		if err := os.Rename(fmt.Sprintf("/state/g%d", cur), fmt.Sprintf("/state/g%d", gen)); err == nil {
			in.mu.Lock()
			in.gen = gen
			in.mu.Unlock()
			return nil
		}
	}
	// Tearing down an overlay costs time in proportion to what was cached
	// in it, and the kernel charges it to whoever drops the last reference.
	// Holding a reference across the detach, and dropping it on another
	// thread, keeps that cost out of Reset.
	hold, err := unix.Open("/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open overlay: %w", err)
	}
	if err := unix.Unmount("/root", unix.MNT_DETACH); err != nil {
		unix.Close(hold)
		return fmt.Errorf("unmount overlay: %w", err)
	}
	in.mu.Lock()
	old := in.gen
	in.gen = gen
	in.mu.Unlock()
	if err := in.mountGen(gen); err != nil {
		return err
	}
	go func() {
		unix.Close(hold)
		if old != gen {
			os.RemoveAll(fmt.Sprintf("/state/g%d", old))
		}
	}()
	return nil
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
func openRoot(p string, flags int, mode uint32) (*os.File, error) {
	root, err := unix.Open("/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
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
	if d, err := openRoot(dir, unix.O_PATH|unix.O_DIRECTORY, 0); err != nil {
		return "", fmt.Errorf("workdir %s: %w", dir, unwrapPath(err))
	} else {
		d.Close()
	}
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, p := range commandPaths(name, env, dir) {
		f, err := openRoot(p, unix.O_PATH, 0)
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
	f, err := openRoot(req.Path, unix.O_RDONLY, 0)
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
	f, err := openRoot(req.Path, flags, mode)
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
	f, err := openRoot(req.Path, unix.O_PATH, 0)
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
