package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The host and the sandbox's init talk over a SOCK_SEQPACKET socket pair:
// one JSON message per packet, with file descriptors (a command's stdin,
// stdout and stderr) passed alongside as SCM_RIGHTS. Commands' output never
// passes through init: the host reads the pipes itself.

const maxPacket = 1 << 16

// maxPassed is how many descriptors one message may carry: a set-up
// passes one detached mount per layer and host directory.
const maxPassed = 64

// setupMsg is the first message the host sends: everything init needs to
// build the sandbox's filesystem. Descriptors passed with it (cgroup task
// files, detached mounts) are referred to by their index among them.
type setupMsg struct {
	Scratch  string     `json:"scratch"`  // host dir: init's tmpfs root is mounted here
	Lowers   []mountSrc `json:"lowers"`   // topmost first
	HostDirs []mountSrc `json:"hostdirs"` // read-only directories at Dst (host base only)
	Hostname string     `json:"hostname"`
	Gen      int        `json:"gen"`
	Rlimits  []rlimit   `json:"rlimits"`
	NoCgroup bool       `json:"nocgroup"` // limits must come from rlimits alone
	Memory   int64      `json:"memory"`
	Pids     int64      `json:"pids"`
	Disk     int64      `json:"disk"` // size of each generation's tmpfs
	// State, when set, is a host directory, bound writable, that holds the
	// generations instead of tmpfs mounts (see tmpfsPlan).
	State  *mountSrc `json:"state,omitempty"`
	Inodes int64     `json:"inodes"` // files of each tmpfs
	// ProcFiles, ProcDirs and ProcRO are the /proc entries to mask and to
	// make read-only (those of the lists in layout_unsafe.go this host has).
	ProcFiles []string `json:"procfiles,omitempty"`
	ProcDirs  []string `json:"procdirs,omitempty"`
	ProcRO    []string `json:"procro,omitempty"`
	// Tasks are the cgroup v1 task files (descriptor indexes) the thread
	// that starts commands moves itself into, so commands start in the
	// sandbox's cgroups while init itself is in none of them.
	Tasks []int `json:"tasks,omitempty"`
	// NoSeccomp turns the system call filter off (tests only: the control
	// rows of the escape suite).
	NoSeccomp bool `json:"noseccomp,omitempty"`
	// KeepCaps leaves commands every capability (tests only, as NoSeccomp).
	KeepCaps bool `json:"keepcaps,omitempty"`
}

type rlimit struct {
	Res  int    `json:"res"`
	Cur  uint64 `json:"cur"`
	Max  uint64 `json:"max"`
	Name string `json:"name"`
}

// request is a message from the host to init.
type request struct {
	ID  uint64 `json:"id"`
	Op  string `json:"op"` // setup, exec, kill, prepare, reset, recycle, freeze, stack, readfile, writefile, stat, listen
	Gen int    `json:"gen,omitempty"`

	Setup *setupMsg `json:"setup,omitempty"`
	Exec  *execMsg  `json:"exec,omitempty"`

	// kill: the exec to kill and why
	Target uint64 `json:"target,omitempty"`
	Reason string `json:"reason,omitempty"`

	// readfile/writefile/stat
	Path  string `json:"path,omitempty"`
	Mode  uint32 `json:"mode,omitempty"`
	Limit int64  `json:"limit,omitempty"`

	// listen: the port on the sandbox's loopback, 0 for one the kernel picks
	Port int `json:"port,omitempty"`

	// freeze: the name the frozen layer gets; stack: the frozen layers,
	// topmost first, a detached mount passed (in order) for each one init
	// does not have mounted.
	Layer  string   `json:"layer,omitempty"`
	Layers []string `json:"layers,omitempty"`
}

type execMsg struct {
	Argv    []string `json:"argv"`
	Env     []string `json:"env"`
	Dir     string   `json:"dir"`
	Timeout int64    `json:"timeout"` // ns; 0 = none
	Grace   int64    `json:"grace"`   // ns between SIGTERM and SIGKILL on timeout
	TTY     bool     `json:"tty"`     // stdin is a terminal: new session, controlling tty
}

// reply is a message from init to the host. Exec produces two: "started"
// and later "exit" (both with the exec's request ID).
type reply struct {
	ID    uint64    `json:"id"`
	Op    string    `json:"op"` // ready, ok, error, started, exit
	Err   string    `json:"err,omitempty"`
	Gen   int       `json:"gen,omitempty"` // ready, reset: the generation mounted
	Pid   int       `json:"pid,omitempty"`
	Exit  *exitInfo `json:"exit,omitempty"`
	Size  int64     `json:"size,omitempty"`
	IsDir bool      `json:"isdir,omitempty"`
	Mode  uint32    `json:"mode,omitempty"`

	// files are the descriptors that came with the reply (listen's socket);
	// whoever receives the reply owns them.
	files []*os.File
}

type exitInfo struct {
	Code     int    `json:"code"`   // exit status, or -1 when killed by a signal
	Signal   int    `json:"signal"` // signal number, 0 when it exited
	TimedOut bool   `json:"timedout,omitempty"`
	Killed   string `json:"killed,omitempty"`   // why init killed it (host request reason)
	DiskFull bool   `json:"diskfull,omitempty"` // the upper layer was full when it ended
	UserNS   int64  `json:"user"`               // CPU time, ns
	SysNS    int64  `json:"sys"`
	MaxRSS   int64  `json:"maxrss"` // bytes
}

// setExit records how a command ended: its wait status, its CPU time in
// nanoseconds and its peak resident set in KiB, as wait4 reports them.
func (i *exitInfo) setExit(ws syscall.WaitStatus, userNS, sysNS, maxRSSKiB int64) {
	switch {
	case ws.Exited():
		i.Code, i.Signal = ws.ExitStatus(), 0
	case ws.Signaled():
		i.Code, i.Signal = -1, int(ws.Signal())
	}
	i.UserNS, i.SysNS, i.MaxRSS = userNS, sysNS, maxRSSKiB*1024
}

// diskFull says whether an upper layer with free bytes and free files
// left is full: less than a page free, or no file. A write that hits the
// disk limit fills the tmpfs to the last page first, so a command that
// failed on it leaves it full.
func diskFull(free, files uint64) bool { return free < 64<<10 || files == 0 }

// conn is one end of the host-init socket, on Go's poller so that a waiting
// reader holds no thread. It is built on os.File rather than package net,
// whose initialisers sandbox init would otherwise run before it starts.
type conn struct {
	f   *os.File
	rc  syscall.RawConn
	buf []byte
	oob []byte
}

// newConn takes over fd, a SOCK_SEQPACKET socket.
func newConn(fd int) (*conn, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	// A non-blocking descriptor makes a pollable File.
	f := os.NewFile(uintptr(fd), "sandbox-socket")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &conn{f: f, rc: rc, buf: make([]byte, maxPacket), oob: make([]byte, unix.CmsgSpace(4*maxPassed))}, nil
}

// send writes one message with optional file descriptors. Callers serialise
// sends; a SOCK_SEQPACKET write is atomic.
func (c *conn) send(v any, files ...*os.File) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > maxPacket {
		return fmt.Errorf("message of %d bytes exceeds %d", len(b), maxPacket)
	}
	oob := rights(files)
	var serr error
	err = c.rc.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), b, oob, nil, 0)
		return serr != unix.EAGAIN
	})
	if err != nil {
		return err
	}
	return serr
}

// rights is the control message that passes files with a message.
func rights(files []*os.File) []byte {
	if len(files) == 0 {
		return nil
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	return unix.UnixRights(fds...)
}

var errClosed = errors.New("connection closed")

// recv reads one message and the descriptors that came with it. Only one
// goroutine may call recv and tryRecv.
func (c *conn) recv(v any) ([]*os.File, error) {
	files, _, err := c.read(v, true)
	return files, err
}

// tryRecv is recv of a message that has arrived already: ok is false,
// and nothing read, when none has.
func (c *conn) tryRecv(v any) (files []*os.File, ok bool, err error) {
	return c.read(v, false)
}

// read reads one message, waiting for it if wait is set.
func (c *conn) read(v any, wait bool) ([]*os.File, bool, error) {
	var n, oobn int
	var rerr error
	err := c.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), c.buf, c.oob, unix.MSG_CMSG_CLOEXEC)
		return !wait || rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if !wait && err == unix.EAGAIN {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var files []*os.File
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(c.oob[:oobn])
		if err != nil {
			return nil, false, err
		}
		for _, m := range msgs {
			fds, err := unix.ParseUnixRights(&m)
			if err != nil {
				continue
			}
			for _, fd := range fds {
				files = append(files, os.NewFile(uintptr(fd), "passed"))
			}
		}
	}
	if n == 0 && oobn == 0 {
		return nil, false, errClosed
	}
	if err := json.Unmarshal(c.buf[:n], v); err != nil {
		closeAll(files)
		return nil, false, fmt.Errorf("decode message: %w", err)
	}
	return files, true, nil
}

func (c *conn) close() error { return c.f.Close() }

func closeAll(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}
