package sandbox

import (
	"os"

	"golang.org/x/sys/unix"
)

// awaitExit returns once process pid has exited (not yet reaped), waiting
// on Go's poller with a pidfd instead of a blocked thread: os.Process.Wait
// holds an OS thread in waitid(2) for as long as the process runs, one a
// sandbox, and Go keeps a thread it made for good. A server holding
// thousands of sandboxes would hold as many threads, every one a pid of
// the machine's kernel.pid_max and one of Go's 10,000. Where pidfds are
// not to be had (Linux before 5.3) it returns at once and Wait blocks as
// before.
func awaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.O_NONBLOCK) // PIDFD_NONBLOCK
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd") // non-blocking: on the poller
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Read(func(fd uintptr) bool {
		// A pidfd is readable once its process has exited; WNOWAIT
		// leaves it for Wait to reap.
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		return err != nil || info.Signo != 0
	})
}
