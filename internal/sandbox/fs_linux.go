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
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	t := s.Scratch
	if err := unix.Mount("tmpfs", t, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=4m"); err != nil {
		return fmt.Errorf("mount scratch tmpfs: %w", err)
	}
	for i, l := range s.Lowers {
		if err := bindRO(l, fmt.Sprintf("%s/l%d", t, i)); err != nil {
			return fmt.Errorf("bind layer %s: %w", l, err)
		}
	}
	for _, d := range s.HostDirs {
		if err := bindRO(d, t+"/h"+d); err != nil {
			return fmt.Errorf("bind host %s: %w", d, err)
		}
	}
	if err := bind(s.State, t+"/state", 0); err != nil {
		return fmt.Errorf("bind state: %w", err)
	}
	if err := mkdirMount("proc", t+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount proc: %w", err)
	}
	if err := buildDev(t + "/dev"); err != nil {
		return err
	}
	for _, d := range []string{"/root", "/.old"} {
		if err := os.Mkdir(t+d, 0o755); err != nil {
			return err
		}
	}
	if err := unix.PivotRoot(t, t+"/.old"); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Unmount("/.old", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach host root: %w", err)
	}
	os.Remove("/.old")
	if err := unix.Sethostname([]byte(s.Hostname)); err != nil {
		return fmt.Errorf("set hostname: %w", err)
	}
	if err := loopbackUp(); err != nil {
		return fmt.Errorf("bring up loopback: %w", err)
	}
	// No nested user namespaces: they would hand commands back the
	// capabilities dropped below.
	if err := os.WriteFile("/proc/sys/user/max_user_namespaces", []byte("0"), 0); err != nil {
		return fmt.Errorf("forbid nested user namespaces: %w", err)
	}
	for _, r := range s.Rlimits {
		if err := syscall.Setrlimit(r.Res, &syscall.Rlimit{Cur: r.Cur, Max: r.Max}); err != nil {
			return fmt.Errorf("set %s limit: %w", r.Name, err)
		}
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
		for c := 0; c <= 63; c++ {
			if !keptCaps[c] {
				if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
					errc <- fmt.Errorf("drop capability %d: %w", c, err)
					return
				}
			}
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

func buildDev(dev string) error {
	if err := mkdirMount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	for _, n := range devNodes {
		p := dev + "/" + n
		if err := os.WriteFile(p, nil, 0o666); err != nil {
			return err
		}
		if err := unix.Mount("/dev/"+n, p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", n, err)
		}
	}
	links := [][2]string{{"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"},
		{"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}, {"pts/ptmx", "ptmx"}}
	for _, l := range links {
		if err := os.Symlink(l[0], dev+"/"+l[1]); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dev+"/shm", 0o1777); err != nil {
		return err
	}
	if err := mkdirMount("devpts", dev+"/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC,
		"newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("mount devpts: %w", err)
	}
	// Read-only: what commands write under /dev must not outlive a reset.
	// Device nodes stay writable; pts and shm are mounts of their own.
	if err := unix.Mount("", dev, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("remount /dev read-only: %w", err)
	}
	return nil
}

// mountGen mounts generation gen of the overlay at /root, with the host
// directories, /proc and /dev inside it.
func (in *initState) mountGen(gen int) error {
	s := in.setup
	g := fmt.Sprintf("/state/g%d", gen)
	for _, d := range []string{g, g + "/upper", g + "/work"} {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	lowers := make([]string, len(s.Lowers))
	for i := range s.Lowers {
		lowers[i] = fmt.Sprintf("/l%d", i)
	}
	opts := "lowerdir=" + strings.Join(lowers, ":") + ",upperdir=" + g + "/upper,workdir=" + g + "/work,userxattr"
	if err := unix.Mount("overlay", "/root", "overlay", unix.MS_NOSUID, opts); err != nil {
		return fmt.Errorf("mount overlay (%s): %w", opts, err)
	}
	for _, d := range s.HostDirs {
		if err := unix.Mount("/h"+d, "/root"+d, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind host %s: %w", d, err)
		}
	}
	if err := unix.Mount("/proc", "/root/proc", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind proc: %w", err)
	}
	if err := unix.Mount("/dev", "/root/dev", "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind dev: %w", err)
	}
	if err := unix.Mount("shm", "/root/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}
	return nil
}

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

func bind(src, dst string, extra uintptr) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	return unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC|extra, "")
}

// bindRO binds src at dst read-only, including every mount below src.
func bindRO(src, dst string) error {
	if err := bind(src, dst, 0); err != nil {
		return err
	}
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	return unix.MountSetattr(unix.AT_FDCWD, dst, unix.AT_RECURSIVE, attr)
}

func mkdirMount(src, dst, fstype string, flags uintptr, data string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	return unix.Mount(src, dst, fstype, flags, data)
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
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
	pathEnv := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, d := range strings.Split(pathEnv, ":") {
		if d == "" {
			d = "."
		}
		p := path.Join(d, name)
		if !path.IsAbs(p) {
			p = path.Join(dir, p)
		}
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
