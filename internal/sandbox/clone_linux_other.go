//go:build linux && !amd64

package sandbox

import "syscall"

// oneShotSupported is false: this architecture has no cloneInit, so
// Runtime.Run uses a sandbox init like New.
const oneShotSupported = false

func cloneInit(flags, stack uintptr, c *childArgs) (uintptr, uintptr) {
	return 0, uintptr(syscall.ENOSYS)
}

func cloneCommand(flags, stack uintptr, c *childArgs) (uintptr, uintptr) {
	return 0, uintptr(syscall.ENOSYS)
}
