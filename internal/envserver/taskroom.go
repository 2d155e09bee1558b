package envserver

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// An episode holds about ten tasks (threads and processes) of the machine
// for as long as it is open: its sandbox's init (a Go process, a handful
// of threads), the shell or agent process in it, and a thread of the
// server waiting on the init. Every task takes a pid, and pids run out
// machine-wide at kernel.pid_max (32,768 by default): past it fork and
// thread creation fail with EAGAIN, and the Go runtime aborts the whole
// server when it cannot start a thread. So a new episode is refused,
// CAPACITY_REACHED like any other, while the machine is within
// taskReserve of its limit: the server stays up, the open episodes keep
// working, and the client is told which limit it met.
const taskReserve = 512

// tasksPerEpisode is about how many tasks an episode adds once its sandbox
// has started (9.2 measured with shell episodes): an episode whose slot is
// taken but whose sandbox is still starting is not in the count yet, and
// many start at once when a trainer's workers connect together.
const tasksPerEpisode = 10

// goMaxThreads is the Go runtime's default cap on a process's threads
// (runtime/debug.SetMaxThreads), past which it aborts the process: the
// server holds a thread for every open sandbox.
const goMaxThreads = 10000

// taskCount is how many tasks count against a limit, and the limit.
type taskCount struct {
	used, limit int
	what        string // the limit's name, for the refusal
}

// taskRoom says why a new episode would not fit in the machine's tasks,
// or "" when it would, with starting episodes (slots taken whose sandboxes
// are not counted yet) on their way. read returns a /proc or /sys file's
// contents.
func taskRoom(read func(string) ([]byte, error), starting int) string {
	need := taskReserve + tasksPerEpisode*starting
	for _, c := range taskCounts(read) {
		if c.limit > 0 && c.used+need > c.limit {
			return fmt.Sprintf("%d of %s %d in use (a new episode is refused within %d of it: %d spare, %d for each of %d episodes starting)",
				c.used, c.what, c.limit, need, taskReserve, tasksPerEpisode, starting)
		}
	}
	return ""
}

// taskCounts reads the limits a new episode's tasks count against: the
// machine's pids and threads (/proc/loadavg's fourth field counts every
// task), the pids cgroup the server is in when it has a limit, and the Go
// runtime's cap on the server's own threads. A file that cannot be read
// leaves its limit out: the check is a guard, not a requirement.
func taskCounts(read func(string) ([]byte, error)) []taskCount {
	var out []taskCount
	used := -1
	if b, err := read("/proc/loadavg"); err == nil {
		// "0.20 0.18 0.12 1/80 11206": running/existing tasks.
		if f := strings.Fields(string(b)); len(f) >= 4 {
			if _, n, ok := strings.Cut(f[3], "/"); ok {
				used = atoiOr(n, -1)
			}
		}
	}
	if used >= 0 {
		for _, k := range []struct{ path, what string }{
			{"/proc/sys/kernel/pid_max", "the machine's tasks: kernel.pid_max"},
			{"/proc/sys/kernel/threads-max", "the machine's tasks: kernel.threads-max"},
		} {
			if b, err := read(k.path); err == nil {
				out = append(out, taskCount{used, atoiOr(string(bytes.TrimSpace(b)), 0), k.what})
			}
		}
	}
	if dir := pidsCgroup(read); dir != "" {
		max, err1 := read(dir + "/pids.max")
		cur, err2 := read(dir + "/pids.current")
		if err1 == nil && err2 == nil {
			if m := strings.TrimSpace(string(max)); m != "max" {
				out = append(out, taskCount{atoiOr(string(bytes.TrimSpace(cur)), 0), atoiOr(m, 0), "the server's pids cgroup: pids.max"})
			}
		}
	}
	if b, err := read("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if n, ok := strings.CutPrefix(line, "Threads:"); ok {
				out = append(out, taskCount{atoiOr(strings.TrimSpace(n), 0), goMaxThreads, "the server's own threads: Go's limit"})
			}
		}
	}
	return out
}

// pidsCgroup is the directory of the cgroup whose pids limit applies to
// the server: the v1 pids controller's, else the v2 hierarchy's ("" when
// neither is found).
func pidsCgroup(read func(string) ([]byte, error)) string {
	b, err := read("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	var v2 string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "pids" {
				return "/sys/fs/cgroup/pids" + f[2]
			}
		}
		if f[0] == "0" && f[1] == "" {
			v2 = f[2]
		}
	}
	if v2 == "" {
		return ""
	}
	for _, mount := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		if _, err := read(mount + v2 + "/pids.max"); err == nil {
			return mount + v2
		}
	}
	return ""
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}

// readProc reads a file of the live system.
func readProc(path string) ([]byte, error) { return os.ReadFile(path) }

// An open episode holds about five of the server's descriptors (4.9
// measured: the sandbox's socket and pipes, the client's connection), and
// past RLIMIT_NOFILE the server can neither start a sandbox nor accept a
// connection. A new episode is refused within fdReserve (and
// fdsPerEpisode for each starting) of it, as for tasks.
const (
	fdsPerEpisode = 6
	fdReserve     = 256
)

// fdRoom says why a new episode would not fit in the server's
// descriptors, or "" when it would. Counting them reads a directory of
// every open one, so it is done only once slots at fdsPerEpisode each
// could come near the limit.
func fdRoom(limit, slots, starting int, countOpen func() int) string {
	if limit <= 0 || fdsPerEpisode*(slots+1)+fdReserve < limit/2 {
		return ""
	}
	open, need := countOpen(), fdReserve+fdsPerEpisode*starting
	if open+need > limit {
		return fmt.Sprintf("%d of the server's open files: RLIMIT_NOFILE %d in use (a new episode is refused within %d of it: %d spare, %d for each of %d episodes starting)",
			open, limit, need, fdReserve, fdsPerEpisode, starting)
	}
	return ""
}

// openFileLimit is the server's RLIMIT_NOFILE (Go raises the soft limit
// to the hard one at start); 0 if it cannot be read.
func openFileLimit() int {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}

// openFiles counts the server's open descriptors.
func openFiles() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents)
}
