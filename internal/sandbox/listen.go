package sandbox

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Listen opens a TCP socket listening on 127.0.0.1 inside the sandbox's own
// network namespace, on a port the kernel picks, and hands it to cwm as a
// file (net.FileListener makes a net.Listener of it; this package does
// not import net, whose initialisers would otherwise run before the
// sandbox fast path of cmd/cwm). The sandbox has no network interface but
// loopback, so this is the one way out that cwm can grant: a process in
// the sandbox connects to 127.0.0.1:PORT and the connection arrives in
// cwm's process, which may then dial out from the host's namespace on its
// behalf (internal/egress relays install steps' downloads this way) or
// refuse.
//
// The socket belongs to the sandbox, not to one command: it stays open
// across Reset (commands come and go, the relay serving them stays), and
// Close of the sandbox shuts it down (Accept on it then fails), so that it
// never outlives the sandbox, whose network namespace it would keep alive.
// The caller closes the file it was given.
func (s *Sandbox) Listen(ctx context.Context) (*os.File, error) {
	return s.ListenPort(ctx, 0)
}

// ListenPort is Listen on a given port (0: one the kernel picks).
func (s *Sandbox) ListenPort(ctx context.Context, port int) (*os.File, error) {
	if port < 0 || port > 65535 {
		return nil, fmt.Errorf("listen in sandbox: port %d is not a TCP port", port)
	}
	if !s.alive() || s.closed.Load() {
		return nil, ErrDead
	}
	id, ch := s.register()
	if err := s.send(request{ID: id, Op: "listen", Port: port}); err != nil {
		s.unregister(id)
		return nil, fmt.Errorf("listen in sandbox: %w", err)
	}
	r, err := s.wait(ctx, ch)
	s.unregister(id)
	// A reply that came after ctx ended still carries its socket.
	select {
	case late := <-ch:
		closeAll(late.files)
	default:
	}
	if err != nil {
		closeAll(r.files)
		return nil, fmt.Errorf("listen in sandbox on 127.0.0.1:%d: %w", port, err)
	}
	if len(r.files) != 1 {
		closeAll(r.files)
		return nil, fmt.Errorf("listen in sandbox: init passed %d descriptors, want 1", len(r.files))
	}
	kept := r.files[0]
	fd, err := unix.FcntlInt(kept.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		kept.Close()
		return nil, fmt.Errorf("listen in sandbox: %w", err)
	}
	given := os.NewFile(uintptr(fd), "sandbox-listener")
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	if s.closed.Load() {
		kept.Close()
		given.Close()
		return nil, ErrDead
	}
	s.listeners = append(s.listeners, kept)
	return given, nil
}

// closeListeners shuts down every socket Listen handed out: a shutdown
// reaches the socket itself, which every copy of its descriptor shares.
func (s *Sandbox) closeListeners() {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	for _, f := range s.listeners {
		unix.Shutdown(int(f.Fd()), unix.SHUT_RDWR)
		f.Close()
	}
	s.listeners = nil
}
