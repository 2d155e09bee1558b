//go:build linux && amd64

package sandbox

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestSeccompFilter runs the filter in x/net/bpf's virtual machine on
// hand-made seccomp_data: which calls it refuses, with which errno.
func TestSeccompFilter(t *testing.T) {
	vm, err := bpf.NewVM(seccompFilter(seccompArch, append(seccompDenied, seccompDeniedArch...), seccompMaxSyscall))
	if err != nil {
		t.Fatal(err)
	}
	// The kernel loads seccomp_data's 32-bit words in the machine's byte
	// order, the virtual machine in network order: the words are written
	// big-endian here, args[0]'s low word where it lies on x86-64.
	run := func(arch uint32, nr uint32, arg0 uint64) uint32 {
		data := make([]byte, 64)
		binary.BigEndian.PutUint32(data[0:], nr)
		binary.BigEndian.PutUint32(data[4:], arch)
		binary.BigEndian.PutUint32(data[16:], uint32(arg0))
		binary.BigEndian.PutUint32(data[20:], uint32(arg0>>32))
		v, err := vm.Run(data)
		if err != nil {
			t.Fatal(err)
		}
		return uint32(v)
	}
	const x86 = unix.AUDIT_ARCH_X86_64
	for _, c := range []struct {
		name string
		arch uint32
		nr   uint32
		arg0 uint64
		want uint32
	}{
		{"read", x86, unix.SYS_READ, 0, retAllow},
		{"keyctl", x86, unix.SYS_KEYCTL, 0, retEPERM},
		{"mount", x86, unix.SYS_MOUNT, 0, retEPERM},
		{"iopl", x86, unix.SYS_IOPL, 0, retEPERM},
		{"clone a thread", x86, unix.SYS_CLONE, unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND, retAllow},
		{"clone a process", x86, unix.SYS_CLONE, uint64(unix.SIGCHLD), retAllow},
		{"clone a user namespace", x86, unix.SYS_CLONE, unix.CLONE_NEWUSER | uint64(unix.SIGCHLD), retEPERM},
		{"clone a network namespace", x86, unix.SYS_CLONE, unix.CLONE_NEWNET, retEPERM},
		{"clone3", x86, unix.SYS_CLONE3, 0, retENOSYS},
		{"unshare files", x86, unix.SYS_UNSHARE, unix.CLONE_FILES, retAllow},
		{"unshare a mount namespace", x86, unix.SYS_UNSHARE, unix.CLONE_NEWNS, retEPERM},
		{"unshare a time namespace", x86, unix.SYS_UNSHARE, unix.CLONE_NEWTIME, retEPERM},
		{"personality query", x86, unix.SYS_PERSONALITY, 0xffffffff, retAllow},
		{"personality READ_IMPLIES_EXEC", x86, unix.SYS_PERSONALITY, 0x0400000, retEPERM},
		{"an x32 call", x86, unix.SYS_READ | 0x40000000, 0, retENOSYS},
		{"a call of a later kernel", x86, seccompMaxSyscall + 1, 0, retENOSYS},
		{"an i386 call", unix.AUDIT_ARCH_I386, 3, 0, retENOSYS},
		{"chroot (commands lack CAP_SYS_CHROOT)", x86, unix.SYS_CHROOT, 0, retAllow},
		{"ptrace (of a command's own children)", x86, unix.SYS_PTRACE, 0, retAllow},
	} {
		if got := run(c.arch, c.nr, c.arg0); got != c.want {
			t.Errorf("%s: filter returns %#x, want %#x", c.name, got, c.want)
		}
	}
}
