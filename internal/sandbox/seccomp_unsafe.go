//go:build linux && (amd64 || arm64)

package sandbox

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Every command runs under a seccomp filter in the spirit of Docker's
// default profile. It refuses, with EPERM, the system calls that reach
// kernel state shared with the host or that have no use inside a sandbox
// (keyrings, kexec, module loading, BPF, performance counters,
// userfaultfd, file handles, reboot, swap, accounting, quotas, raw port
// I/O, the clock, the kernel log, io_uring), every mount-family call, and
// the creation or joining of namespaces (unshare, setns, clone with a
// CLONE_NEW* flag). clone3 gets ENOSYS instead: a filter cannot read its
// flags, which are in memory, and glibc falls back to clone, whose flags
// it can, only on ENOSYS (EPERM would break pthread_create). Calls of
// other architectures' ABIs (x32, i386 on x86-64) and numbers beyond
// those this build knows also get ENOSYS, as an older kernel would answer.
// docs/sandbox.md lists the calls and why.
//
// The program is assembled with golang.org/x/net/bpf, which encodes and
// checks classic BPF instructions; the policy is this file's: the
// well-kept pure-Go seccomp libraries cannot express a test of flag bits
// (clone's CLONE_NEW*) and would add name tables the kernel's numbers in
// golang.org/x/sys/unix already give.

// seccompDenied are the calls refused on every architecture.
var seccompDenied = []uintptr{
	// Kernel keyrings are shared with the host.
	unix.SYS_ADD_KEY, unix.SYS_KEYCTL, unix.SYS_REQUEST_KEY,
	// Replacing or extending the kernel.
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE,
	unix.SYS_DELETE_MODULE, unix.SYS_BPF,
	// Kernel observation and memory tricks used by exploits.
	unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD, unix.SYS_SYSLOG, unix.SYS_LOOKUP_DCOOKIE,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	// File handles open files by inode, around the mount namespace.
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
	// Machine-wide state.
	unix.SYS_REBOOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT, unix.SYS_QUOTACTL,
	unix.SYS_QUOTACTL_FD, unix.SYS_NFSSERVCTL, unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME,
	unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX, unix.SYS_VHANGUP, unix.SYS_FANOTIFY_INIT,
	unix.SYS_MBIND, unix.SYS_SET_MEMPOLICY, unix.SYS_MIGRATE_PAGES, unix.SYS_MOVE_PAGES,
	unix.SYS_SETHOSTNAME, unix.SYS_SETDOMAINNAME,
	// Other processes' memory (Docker allows these only with CAP_SYS_PTRACE).
	unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_KCMP, unix.SYS_PIDFD_GETFD,
	// The filesystem the sandbox was built with stays as it is. (chroot is
	// not here: commands start by one, and lack CAP_SYS_CHROOT after it.)
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_MOVE_MOUNT,
	unix.SYS_OPEN_TREE, unix.SYS_OPEN_TREE_ATTR, unix.SYS_FSOPEN, unix.SYS_FSCONFIG,
	unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	// Namespaces: none may be joined, listed or made (clone and unshare
	// are checked by flag below).
	unix.SYS_SETNS, unix.SYS_LISTNS,
}

// cloneNewFlags are the namespace flags clone and unshare may not carry.
const cloneNewFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// personalities are the personality(2) values allowed, as in Docker's
// profile: the default, UNAME26 and the query; not, for example, the
// BSD emulation or READ_IMPLIES_EXEC.
var personalities = []uint32{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}

const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// seccomp data offsets (struct seccomp_data).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits of args[0] on little-endian machines
)

var seccompOnce struct {
	sync.Once
	prog unix.SockFprog
	raw  []bpf.RawInstruction
	err  error
}

// seccompProgram returns the filter, assembled once. Its instructions
// live for the life of the process, so a forked child may use the
// pointer without allocating.
func seccompProgram() (*unix.SockFprog, error) {
	seccompOnce.Do(func() {
		raw, err := bpf.Assemble(seccompFilter(seccompArch, append(seccompDenied, seccompDeniedArch...), seccompMaxSyscall))
		if err != nil {
			seccompOnce.err = fmt.Errorf("assemble the seccomp filter: %w", err)
			return
		}
		seccompOnce.raw = raw
		seccompOnce.prog = unix.SockFprog{Len: uint16(len(raw)), Filter: (*unix.SockFilter)(unsafe.Pointer(&raw[0]))}
	})
	if seccompOnce.err != nil {
		return nil, seccompOnce.err
	}
	return &seccompOnce.prog, nil
}

// seccompFilter is the policy as a BPF program for the given audit
// architecture, denied calls and highest known call number.
func seccompFilter(arch uint32, denied []uintptr, maxNr uint32) []bpf.Instruction {
	p := &bpfProg{}
	p.emit(bpf.LoadAbsolute{Off: offArch, Size: 4})
	p.jumpIf(bpf.JumpNotEqual, arch, "enosys")
	p.emit(bpf.LoadAbsolute{Off: offNr, Size: 4})
	// x32 calls carry bit 30 of the number; they and unknown numbers are
	// refused as missing.
	p.jumpIf(bpf.JumpGreaterThan, maxNr, "enosys")
	for _, nr := range denied {
		p.jumpIf(bpf.JumpEqual, uint32(nr), "eperm")
	}
	p.jumpIf(bpf.JumpEqual, unix.SYS_CLONE3, "enosys")
	p.jumpIf(bpf.JumpEqual, unix.SYS_CLONE, "clone")
	p.jumpIf(bpf.JumpEqual, unix.SYS_UNSHARE, "unshare")
	p.jumpIf(bpf.JumpEqual, unix.SYS_PERSONALITY, "personality")
	p.emit(bpf.RetConstant{Val: retAllow})

	p.label("clone")
	p.emit(bpf.LoadAbsolute{Off: offArg0, Size: 4})
	p.jumpIf(bpf.JumpBitsSet, cloneNewFlags, "eperm")
	p.emit(bpf.RetConstant{Val: retAllow})
	p.label("unshare")
	p.emit(bpf.LoadAbsolute{Off: offArg0, Size: 4})
	p.jumpIf(bpf.JumpBitsSet, cloneNewFlags|unix.CLONE_NEWTIME, "eperm")
	p.emit(bpf.RetConstant{Val: retAllow})
	p.label("personality")
	p.emit(bpf.LoadAbsolute{Off: offArg0, Size: 4})
	for _, v := range personalities {
		p.jumpIf(bpf.JumpEqual, v, "allow")
	}
	p.label("eperm")
	p.emit(bpf.RetConstant{Val: retEPERM})
	p.label("enosys")
	p.emit(bpf.RetConstant{Val: retENOSYS})
	p.label("allow")
	p.emit(bpf.RetConstant{Val: retAllow})
	return p.resolve()
}

// bpfProg assembles a program with forward jumps to labels.
type bpfProg struct {
	ins    []bpf.Instruction
	jumps  map[int]string // instruction index -> label its true branch goes to
	labels map[string]int
}

func (p *bpfProg) emit(i bpf.Instruction) { p.ins = append(p.ins, i) }

func (p *bpfProg) jumpIf(cond bpf.JumpTest, val uint32, to string) {
	if p.jumps == nil {
		p.jumps = map[int]string{}
	}
	p.jumps[len(p.ins)] = to
	p.emit(bpf.JumpIf{Cond: cond, Val: val})
}

func (p *bpfProg) label(name string) {
	if p.labels == nil {
		p.labels = map[string]int{}
	}
	p.labels[name] = len(p.ins)
}

// resolve fills in the jumps' skips. Every jump is forward and shorter
// than 256 instructions, or the program is malformed and Assemble (or the
// kernel) refuses it.
func (p *bpfProg) resolve() []bpf.Instruction {
	for i, to := range p.jumps {
		j := p.ins[i].(bpf.JumpIf)
		j.SkipTrue = uint8(p.labels[to] - i - 1)
		p.ins[i] = j
	}
	return p.ins
}

// installSeccomp applies the filter to the calling thread; threads and
// processes it starts inherit it. The thread needs CAP_SYS_ADMIN in its
// user namespace (the sandbox's root has it until it execs a command), so
// no_new_privs is not needed: the sandbox's mounts are nosuid anyway.
func installSeccomp() error {
	prog, err := seccompProgram()
	if err != nil {
		return err
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(prog))); e != 0 {
		return fmt.Errorf("install the seccomp filter: %w", e)
	}
	return nil
}
