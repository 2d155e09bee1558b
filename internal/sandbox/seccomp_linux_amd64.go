package sandbox

import "golang.org/x/sys/unix"

const seccompSupported = true

// seccompArch is the audit architecture of the calls the filter allows;
// i386 calls (int 0x80) have another and are refused.
const seccompArch = unix.AUDIT_ARCH_X86_64

// seccompMaxSyscall is the highest x86-64 call number this build knows;
// above it are x32 calls (bit 30) and calls of later kernels.
const seccompMaxSyscall = unix.SYS_RSEQ_SLICE_YIELD

// seccompDeniedArch are x86-64's own calls to refuse: raw port I/O and
// obsolete calls (Docker's profile refuses them too).
var seccompDeniedArch = []uintptr{
	unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_CREATE_MODULE, unix.SYS_GET_KERNEL_SYMS,
	unix.SYS_QUERY_MODULE, unix.SYS_USELIB, unix.SYS_USTAT, unix.SYS_SYSFS, unix.SYS__SYSCTL,
	unix.SYS_AFS_SYSCALL, unix.SYS_TUXCALL, unix.SYS_SECURITY, unix.SYS_GETPMSG, unix.SYS_PUTPMSG,
	unix.SYS_VSERVER,
}
