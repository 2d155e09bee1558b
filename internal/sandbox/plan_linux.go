package sandbox

import (
	"fmt"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A plan is a sandbox's set-up as a list of system calls prepared in
// advance. Sandbox init runs it as ordinary Go code; a one-shot sandbox
// (Runtime.Run) runs it in the forked child before exec, where code may not
// allocate or grow its stack. Both build the same filesystem from the same
// plan, so there is one description of the sandbox's layout.
type plan struct {
	steps []step
	what  []string // what each step does, for error messages
	keep  [][]byte // memory the steps point to
	made  map[string]bool
}

// step is one system call. A step with fd set opens a descriptor; later
// steps with prev set receive it as their prev'th argument (1-based).
type step struct {
	trap   uintptr
	args   [6]uintptr
	fd     bool
	prev   int8
	ok     syscall.Errno // an error that counts as success (EEXIST for mkdir)
	ignore bool          // any error counts as success
}

func (p *plan) add(what string, st step) {
	p.steps = append(p.steps, st)
	p.what = append(p.what, what)
}

func (p *plan) call(what string, trap uintptr, args ...uintptr) {
	st := step{trap: trap}
	copy(st.args[:], args)
	p.add(what, st)
}

// append adds q's steps after p's.
func (p *plan) append(q *plan) {
	p.steps = append(p.steps, q.steps...)
	p.what = append(p.what, q.what...)
	p.keep = append(p.keep, q.keep...)
}

// str returns a NUL-terminated copy of s that lives as long as the plan;
// "" is a null pointer.
func (p *plan) str(s string) uintptr {
	if s == "" {
		return 0
	}
	b := append([]byte(s), 0)
	p.keep = append(p.keep, b)
	return uintptr(unsafe.Pointer(&b[0]))
}

func (p *plan) mem(n int) []byte {
	b := make([]byte, n)
	p.keep = append(p.keep, b)
	return b
}

// mkdirAll creates dir and its parents below root, which exists.
func (p *plan) mkdirAll(root, dir string) {
	rel := strings.TrimPrefix(dir, root)
	cur := root
	for _, part := range strings.Split(strings.Trim(rel, "/"), "/") {
		cur += "/" + part
		if p.made[cur] {
			continue
		}
		if p.made == nil {
			p.made = map[string]bool{}
		}
		p.made[cur] = true
		p.add("create "+cur, step{trap: unix.SYS_MKDIRAT, args: [6]uintptr{atFDCWD, p.str(cur), 0o755}, ok: unix.EEXIST})
	}
}

func (p *plan) mount(what, src, dst, fstype string, flags uintptr, data string) {
	p.call(what, unix.SYS_MOUNT, p.str(src), p.str(dst), p.str(fstype), flags, p.str(data))
}

// bindRO binds src at dst read-only, including every mount below src.
func (p *plan) bindRO(what, src, dst string) {
	p.mount(what, src, dst, "", unix.MS_BIND|unix.MS_REC, "")
	attr := (*unix.MountAttr)(unsafe.Pointer(&p.mem(int(unsafe.Sizeof(unix.MountAttr{})))[0]))
	attr.Attr_set = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	p.call(what, unix.SYS_MOUNT_SETATTR, atFDCWD, p.str(dst), unix.AT_RECURSIVE,
		uintptr(unsafe.Pointer(attr)), unsafe.Sizeof(*attr))
}

// atFDCWD is AT_FDCWD (-100) as a system call argument; the kernel reads
// directory descriptors as 32-bit ints.
const atFDCWD uintptr = 1<<32 + unix.AT_FDCWD

// withFD makes the call open (which returns a descriptor), then the calls
// use adds (each receiving the descriptor as its first argument), then
// closes it.
func (p *plan) withFD(what string, open step, use ...step) {
	open.fd = true
	p.add(what, open)
	for _, st := range use {
		st.prev = 1
		p.add(what, st)
	}
	p.add(what, step{trap: unix.SYS_CLOSE, prev: 1})
}

func (p *plan) openat(name string, flags int, mode uint32) step {
	return step{trap: unix.SYS_OPENAT, args: [6]uintptr{atFDCWD, p.str(name), uintptr(flags | unix.O_CLOEXEC), uintptr(mode)}}
}

// setupPlan lays out init's root, pivots into it and configures the
// namespaces (see the layout in fs_linux.go). It ends where mountGen's plan
// starts.
func setupPlan(s *setupMsg) *plan {
	p := &plan{}
	p.mount("make mounts private", "", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
	t := s.Scratch
	p.mount("mount scratch tmpfs", "tmpfs", t, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=4m")
	for i, l := range s.Lowers {
		dst := fmt.Sprintf("%s/l%d", t, i)
		p.mkdirAll(t, dst)
		p.bindRO("bind layer "+l, l, dst)
	}
	for _, d := range s.HostDirs {
		p.mkdirAll(t, t+"/h"+d)
		p.bindRO("bind host "+d, d, t+"/h"+d)
	}
	p.mkdirAll(t, t+"/state")
	p.mount("bind state", s.State, t+"/state", "", unix.MS_BIND|unix.MS_REC, "")
	p.mkdirAll(t, t+"/proc")
	p.mount("mount proc", "proc", t+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	p.dev(t, t+"/dev")
	p.mkdirAll(t, t+"/root")
	p.mkdirAll(t, t+"/.old")
	p.call("pivot_root", unix.SYS_PIVOT_ROOT, p.str(t), p.str(t+"/.old"))
	p.call("chdir /", unix.SYS_CHDIR, p.str("/"))
	p.call("detach host root", unix.SYS_UMOUNT2, p.str("/.old"), unix.MNT_DETACH)
	p.add("remove /.old", step{trap: unix.SYS_UNLINKAT, args: [6]uintptr{atFDCWD, p.str("/.old"), unix.AT_REMOVEDIR}, ignore: true})
	host := p.str(s.Hostname)
	p.call("set hostname", unix.SYS_SETHOSTNAME, host, uintptr(len(s.Hostname)))
	// Loopback up: a new network namespace's lo has IFF_LOOPBACK alone.
	ifr := p.mem(unix.IFNAMSIZ + 24)
	copy(ifr, "lo")
	*(*uint16)(unsafe.Pointer(&ifr[unix.IFNAMSIZ])) = unix.IFF_LOOPBACK | unix.IFF_UP | unix.IFF_RUNNING
	p.withFD("bring up loopback",
		step{trap: unix.SYS_SOCKET, args: [6]uintptr{unix.AF_INET, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC}},
		step{trap: unix.SYS_IOCTL, args: [6]uintptr{0, unix.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr[0]))}})
	// No nested user namespaces: they would hand commands back the
	// capabilities that are dropped before every command starts.
	p.withFD("forbid nested user namespaces", p.openat("/proc/sys/user/max_user_namespaces", unix.O_WRONLY, 0),
		step{trap: unix.SYS_WRITE, args: [6]uintptr{0, p.str("0"), 1}})
	for _, r := range s.Rlimits {
		lim := p.mem(16)
		*(*[2]uint64)(unsafe.Pointer(&lim[0])) = [2]uint64{r.Cur, r.Max}
		p.call("set "+r.Name+" limit", unix.SYS_PRLIMIT64, 0, uintptr(r.Res), uintptr(unsafe.Pointer(&lim[0])), 0)
	}
	return p
}

// dev builds a minimal /dev at dev: a tmpfs with the host's harmless
// device nodes bound in, the usual links, a private devpts, and read-only
// so that what commands write there cannot outlive a reset.
func (p *plan) dev(root, dev string) {
	p.mkdirAll(root, dev)
	p.mount("mount /dev", "tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k")
	for _, n := range devNodes {
		node := dev + "/" + n
		p.withFD("create "+node, p.openat(node, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o666))
		p.mount("bind /dev/"+n, "/dev/"+n, node, "", unix.MS_BIND, "")
	}
	links := [][2]string{{"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"},
		{"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}, {"pts/ptmx", "ptmx"}}
	for _, l := range links {
		p.call("create "+dev+"/"+l[1], unix.SYS_SYMLINKAT, p.str(l[0]), atFDCWD, p.str(dev+"/"+l[1]))
	}
	p.call("create "+dev+"/shm", unix.SYS_MKDIRAT, atFDCWD, p.str(dev+"/shm"), 0o1777)
	p.mkdirAll(root, dev+"/pts")
	p.mount("mount devpts", "devpts", dev+"/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC,
		"newinstance,ptmxmode=0666,mode=0620")
	p.mount("remount /dev read-only", "", dev, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, "")
}

// genPlan mounts generation gen of the overlay at /root (see overlayPlan).
func genPlan(s *setupMsg, gen int) *plan {
	return overlayPlan(s, fmt.Sprintf("/state/g%d", gen))
}

// overlayPlan mounts the overlay at /root with its upper and work
// directories in g, and the host directories, /proc and /dev inside it. It
// runs after setupPlan, in the pivoted root.
func overlayPlan(s *setupMsg, g string) *plan {
	p := &plan{}
	p.mkdirAll("/state", g+"/upper")
	p.mkdirAll("/state", g+"/work")
	lowers := make([]string, len(s.Lowers))
	for i := range s.Lowers {
		lowers[i] = fmt.Sprintf("/l%d", i)
	}
	opts := "lowerdir=" + strings.Join(lowers, ":") + ",upperdir=" + g + "/upper,workdir=" + g + "/work,userxattr"
	p.mount("mount overlay ("+opts+")", "overlay", "/root", "overlay", unix.MS_NOSUID, opts)
	for _, d := range s.HostDirs {
		p.mount("bind host "+d, "/h"+d, "/root"+d, "", unix.MS_BIND|unix.MS_REC, "")
	}
	p.mount("bind proc", "/proc", "/root/proc", "", unix.MS_BIND, "")
	p.mount("bind dev", "/dev", "/root/dev", "", unix.MS_BIND|unix.MS_REC, "")
	p.mount("mount /dev/shm", "shm", "/root/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777")
	return p
}

// dropCaps removes from the bounding set every capability commands do not
// keep (keptCaps). The bounding set belongs to a thread.
func (p *plan) dropCaps() {
	for c := 0; c <= 63; c++ {
		if !keptCaps[c] {
			p.add(fmt.Sprintf("drop capability %d", c), step{trap: unix.SYS_PRCTL,
				args: [6]uintptr{unix.PR_CAPBSET_DROP, uintptr(c)}, ok: unix.EINVAL})
		}
	}
}

// run makes the plan's calls in order.
func (p *plan) run() error {
	if i, errno := runSteps(p.steps); i >= 0 {
		return fmt.Errorf("%s: %w", p.what[i], errno)
	}
	return nil
}

// runSteps makes the calls of steps in order and returns the index and
// error of the first that fails, or -1. It is safe between fork and exec:
// it neither allocates nor calls anything that could grow the stack.
//
//go:nosplit
//go:norace
func runSteps(steps []step) (int, syscall.Errno) {
	var fd uintptr
	for i := 0; i < len(steps); i++ {
		st := &steps[i]
		a := st.args
		if st.prev > 0 {
			a[st.prev-1] = fd
		}
		r, _, e := syscall.RawSyscall6(st.trap, a[0], a[1], a[2], a[3], a[4], a[5])
		if e != 0 && e != st.ok && !st.ignore {
			return i, e
		}
		if st.fd {
			fd = r
		}
	}
	return -1, 0
}
