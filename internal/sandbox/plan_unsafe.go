//go:build linux

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

// empty returns a pointer to an empty string (not a null pointer, which
// the *_EMPTY_PATH flags of some calls do not accept).
func (p *plan) empty() uintptr {
	b := p.mem(1)
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

// bindRO binds src at dst read-only, including every mount below src. A
// failure with the error ok (ENOENT for what a host may lack) counts as
// success.
func (p *plan) bindRO(what, src, dst string, ok syscall.Errno) {
	p.bindWith(what, src, dst, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, ok)
}

// bindNode binds the host's device node src at dst read-only, so that
// nothing in the sandbox changes the host's inode through it (touch would
// move its times: a node's 0666 mode lets anyone set them), yet usable:
// reading and writing a device need no writable mount, only the absence of
// nodev.
func (p *plan) bindNode(what, src, dst string, ok syscall.Errno) {
	p.bindWith(what, src, dst, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, ok)
}

func (p *plan) bindWith(what, src, dst string, attrs uint64, ok syscall.Errno) {
	p.add(what, step{trap: unix.SYS_MOUNT, args: [6]uintptr{p.str(src), p.str(dst), 0, unix.MS_BIND | unix.MS_REC}, ok: ok})
	attr := (*unix.MountAttr)(unsafe.Pointer(&p.mem(int(unsafe.Sizeof(unix.MountAttr{})))[0]))
	attr.Attr_set = attrs
	p.add(what, step{trap: unix.SYS_MOUNT_SETATTR, args: [6]uintptr{atFDCWD, p.str(dst), unix.AT_RECURSIVE,
		uintptr(unsafe.Pointer(attr)), unsafe.Sizeof(*attr)}, ok: ok})
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
