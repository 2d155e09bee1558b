//go:build linux

package sandbox

import (
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The sandbox's mount namespace is built from plans (plan_unsafe.go): the
// same steps whether sandbox init runs them or the pid 1 of a one-shot
// sandbox does. See fs_linux.go for the layout they make.

// /proc inside: what Docker and runc mask and make read-only, and a few
// more that describe the host's kernel (its symbols, its keys).
var (
	// procMaskedFiles are covered with the host's /dev/null, bound
	// read-only (bindNode).
	procMaskedFiles = []string{"kcore", "keys", "key-users", "kallsyms", "timer_list", "timer_stats",
		"sched_debug", "latency_stats", "interrupts", "kmsg", "kpagecount", "kpageflags",
		"kpagecgroup", "vmallocinfo", "softirqs"}
	// procMaskedDirs are covered with an empty read-only tmpfs.
	procMaskedDirs = []string{"acpi", "asound", "scsi", "firmware", "driver", "dynamic_debug"}
	// procReadOnly are bound read-only over themselves: the kernel's
	// settings. (They would be refused to the sandbox's root anyway, which
	// is not the host's; this holds even for the settings a user
	// namespace owns, such as its network's.)
	procReadOnly = []string{"sys", "sysrq-trigger", "irq", "bus", "fs"}
)

// scratchPlan mounts the tmpfs that becomes the sandbox's root at
// s.Scratch and moves into it. It runs as cwm's uid, which may look up
// $CWM_HOME; what follows (setupPlan) uses paths relative to the scratch
// root and runs as the sandbox's root, which owns the tmpfs (uid=0 is read
// in its user namespace) and can create files in it, which cwm's uid,
// unmapped there, cannot.
func scratchPlan(s *setupMsg) *plan {
	p := &plan{}
	p.mount("make mounts private", "", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
	p.mount("mount scratch tmpfs", "tmpfs", s.Scratch, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=4m,uid=0,gid=0")
	p.call("enter the scratch tmpfs", unix.SYS_CHDIR, p.str(s.Scratch))
	return p
}

// setupPlan lays out the sandbox's root in the scratch tmpfs (the working
// directory), pivots into it and configures the namespaces. It ends where
// a generation's plan (tmpfsPlan, overlayPlan) starts.
func setupPlan(s *setupMsg) *plan {
	p := &plan{}
	t := "."
	for i, l := range s.Lowers {
		dst := fmt.Sprintf("%s/l%d", t, i)
		p.mkdirAll(t, dst)
		p.attach("layer "+l.Path, l, dst)
	}
	for _, d := range s.HostDirs {
		p.mkdirAll(t, t+"/h"+d.Dst)
		p.attach("host directory "+d.Path, d, t+"/h"+d.Dst)
	}
	p.mkdirAll(t, t+"/state")
	if s.State != nil {
		p.attach("the upper layers' directory", *s.State, t+"/state")
	}
	p.mkdirAll(t, t+"/proc")
	p.mount("mount proc", "proc", t+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	// No nested user namespaces: they would hand commands back the
	// capabilities dropped before every command starts. Written before
	// /proc/sys becomes read-only.
	p.withFD("forbid nested user namespaces", p.openat(t+"/proc/sys/user/max_user_namespaces", unix.O_WRONLY, 0),
		step{trap: unix.SYS_WRITE, args: [6]uintptr{0, p.str("0"), 1}})
	p.maskProc(t+"/proc", s)
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
	for _, r := range s.Rlimits {
		lim := p.mem(16)
		*(*[2]uint64)(unsafe.Pointer(&lim[0])) = [2]uint64{r.Cur, r.Max}
		p.call("set "+r.Name+" limit", unix.SYS_PRLIMIT64, 0, uintptr(r.Res), uintptr(unsafe.Pointer(&lim[0])), 0)
	}
	return p
}

// attach puts a read-only directory at dst: the detached mount the host
// made of it (idmapped), or a bind of its host path.
func (p *plan) attach(what string, src mountSrc, dst string) {
	switch {
	case src.FD < 0 && src.RW:
		p.mount("bind "+what, src.Path, dst, "", unix.MS_BIND, "")
		return
	case src.FD < 0:
		p.bindRO("bind "+what, src.Path, dst, 0)
		return
	}
	p.call("attach "+what, unix.SYS_MOVE_MOUNT, uintptr(src.FD), p.empty(), atFDCWD, p.str(dst), unix.MOVE_MOUNT_F_EMPTY_PATH)
}

// maskProc hides, under the sandbox's procfs at proc, what describes or
// configures the host's kernel (the lists above; an entry this kernel
// lacks is skipped).
func (p *plan) maskProc(proc string, s *setupMsg) {
	for _, f := range s.ProcFiles {
		p.bindNode("mask /proc/"+f, "/dev/null", proc+"/"+f, unix.ENOENT)
	}
	for _, d := range s.ProcDirs {
		p.add("mask /proc/"+d, step{trap: unix.SYS_MOUNT, args: [6]uintptr{p.str("tmpfs"), p.str(proc + "/" + d), p.str("tmpfs"),
			unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, p.str("mode=0555,size=4k")}, ok: unix.ENOENT})
	}
	for _, d := range s.ProcRO {
		p.bindRO("make /proc/"+d+" read-only", proc+"/"+d, proc+"/"+d, unix.ENOENT)
	}
}

// dev builds a minimal /dev at dev: a tmpfs with the host's harmless
// device nodes bound in, the usual links, a private devpts, and read-only
// so that what commands write there cannot outlive a reset.
func (p *plan) dev(root, dev string) {
	p.mkdirAll(root, dev)
	p.mount("mount /dev", "tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k,uid=0,gid=0")
	for _, n := range devNodes {
		node := dev + "/" + n
		p.withFD("create "+node, p.openat(node, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o666))
		p.bindNode("bind /dev/"+n, "/dev/"+n, node, 0)
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

// genDir is where generation gen of the upper layer is mounted, inside
// the sandbox's mount namespace (after pivot_root).
func genDir(gen int) string { return fmt.Sprintf("/state/g%d", gen) }

// tmpfsPlan mounts generation gen's file system: a tmpfs of the disk
// limit's size, holding the overlay's upper and work directories. What
// commands write lives there and nowhere else: it is bounded, counted
// against the sandbox's memory, and gone when unmounted.
//
// With s.State set (a kernel whose tmpfs lacks the user.* extended
// attributes overlayfs needs here, before 6.6) generations are plain
// directories of that host directory instead, and the disk limit does not
// hold.
func tmpfsPlan(s *setupMsg, gen int) *plan {
	p := &plan{}
	g := genDir(gen)
	p.call("create "+g, unix.SYS_MKDIRAT, atFDCWD, p.str(g), 0o755)
	if s.State == nil {
		p.mount("mount the upper layer's tmpfs", "tmpfs", g, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV,
			fmt.Sprintf("mode=0755,size=%d,nr_inodes=%d", s.Disk, s.Inodes))
	}
	p.call("create "+g+"/upper", unix.SYS_MKDIRAT, atFDCWD, p.str(g+"/upper"), 0o755)
	p.call("create "+g+"/work", unix.SYS_MKDIRAT, atFDCWD, p.str(g+"/work"), 0o755)
	return p
}

// overlayPlan mounts the overlay of generation gen (whose tmpfs tmpfsPlan
// made) at root (/root, or a generation's own path: see swap), and the
// host directories, /proc and /dev inside it. It runs after setupPlan, in
// the pivoted root. frozen are the checkpoints' frozen layers (directories
// of init's root, topmost first), stacked between the upper layer and the
// environment's layers.
func overlayPlan(s *setupMsg, gen int, frozen []string, root string) *plan {
	p := &plan{}
	g := genDir(gen)
	lowers := append([]string{}, frozen...)
	for i := range s.Lowers {
		lowers = append(lowers, fmt.Sprintf("/l%d", i))
	}
	opts := "lowerdir=" + strings.Join(lowers, ":") + ",upperdir=" + g + "/upper,workdir=" + g + "/work,userxattr"
	p.mount("mount overlay ("+opts+")", "overlay", root, "overlay", unix.MS_NOSUID, opts)
	for _, d := range s.HostDirs {
		p.mount("bind host "+d.Dst, "/h"+d.Dst, root+d.Dst, "", unix.MS_BIND|unix.MS_REC, "")
	}
	p.mount("bind proc", "/proc", root+"/proc", "", unix.MS_BIND|unix.MS_REC, "")
	p.mount("bind dev", "/dev", root+"/dev", "", unix.MS_BIND|unix.MS_REC, "")
	p.mount("mount /dev/shm", "shm", root+"/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV,
		fmt.Sprintf("mode=1777,size=%d,nr_inodes=%d", s.Memory, s.Inodes))
	return p
}
