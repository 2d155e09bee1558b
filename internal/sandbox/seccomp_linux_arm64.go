package sandbox

import "golang.org/x/sys/unix"

const seccompSupported = true

// seccompArch is the audit architecture of the calls the filter allows.
const seccompArch = unix.AUDIT_ARCH_AARCH64

// seccompMaxSyscall is the highest arm64 call number this build knows.
const seccompMaxSyscall = unix.SYS_RSEQ_SLICE_YIELD

// seccompDeniedArch: arm64 has none of x86-64's port I/O or obsolete calls.
var seccompDeniedArch []uintptr
