package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// listen makes a TCP socket listening on 127.0.0.1:req.Port in init's
// network namespace (the sandbox's) and passes it to the host. Init only
// makes it: it never accepts on it.
func (in *initState) listen(req request) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		in.replyErr(req.ID, fmt.Errorf("socket: %w", err))
		return
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		in.replyErr(req.ID, fmt.Errorf("setsockopt: %w", err))
		return
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: req.Port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		in.replyErr(req.ID, fmt.Errorf("bind 127.0.0.1:%d: %w", req.Port, err))
		return
	}
	if err := unix.Listen(fd, 128); err != nil {
		in.replyErr(req.ID, fmt.Errorf("listen: %w", err))
		return
	}
	in.reply(reply{ID: req.ID, Op: "ok"}, f)
}
