package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// acceptOne reads everything the first connection to ln sends.
func acceptOne(ln net.Listener) <-chan string {
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- "accept: " + err.Error()
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		b, err := io.ReadAll(c)
		if err != nil {
			got <- "read: " + err.Error()
			return
		}
		got <- string(b)
	}()
	return got
}

// listen is Listen as a net.Listener.
func listen(ctx context.Context, s *Sandbox, port int) (net.Listener, error) {
	f, err := s.ListenPort(ctx, port)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return net.FileListener(f)
}

func TestListen(t *testing.T) {
	rt := newRuntime(t, Options{})
	s := newSandbox(t, rt, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ln, err := listen(ctx, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	if !addr.IP.Equal(net.IPv4(127, 0, 0, 1)) || addr.Port == 0 {
		t.Fatalf("Listen() address = %v, want 127.0.0.1 with a port", addr)
	}
	// The port is the sandbox's: nothing listens there on the host.
	if c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second); err == nil {
		c.Close()
		t.Errorf("dial %s from the host succeeded: the listener is not in the sandbox's namespace", addr)
	}
	send := fmt.Sprintf("echo hello from inside > /dev/tcp/127.0.0.1/%d", addr.Port)
	got := acceptOne(ln)
	if r := sh(t, s, send); r.ExitCode != 0 {
		t.Fatalf("connect from the sandbox: exit %d: %s", r.ExitCode, r.Stderr)
	}
	if g := <-got; g != "hello from inside\n" {
		t.Errorf("cwm's side read %q, want %q", g, "hello from inside\n")
	}

	// A reset ends the sandbox's commands, not the listener.
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	got = acceptOne(ln)
	if r := sh(t, s, send); r.ExitCode != 0 {
		t.Fatalf("connect after Reset: exit %d: %s", r.ExitCode, r.Stderr)
	}
	if g := <-got; g != "hello from inside\n" {
		t.Errorf("after Reset cwm's side read %q, want %q", g, "hello from inside\n")
	}

	// A given port; the same port twice is refused with the reason.
	ln2, err := listen(ctx, s, addr.Port+1)
	if err != nil {
		t.Fatal(err)
	}
	if p := ln2.Addr().(*net.TCPAddr).Port; p != addr.Port+1 {
		t.Errorf("ListenPort(%d) listens on %d", addr.Port+1, p)
	}
	if _, err := s.ListenPort(ctx, addr.Port); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("ListenPort(%d) twice = %v, want address already in use", addr.Port, err)
	}
	if _, err := s.ListenPort(ctx, 70000); err == nil {
		t.Errorf("ListenPort(70000) succeeded")
	}

	// Close of the sandbox shuts its listeners down, an Accept waiting
	// on one as well as a later one.
	waiting := acceptOne(ln2)
	s.Close()
	if g := <-waiting; !strings.HasPrefix(g, "accept: ") {
		t.Errorf("an Accept waiting at the sandbox's Close got %q, want an error", g)
	}
	if _, err := ln.Accept(); err == nil {
		t.Errorf("Accept after the sandbox's Close succeeded")
	}
	ln.Close()
	ln2.Close()
	if _, err := s.Listen(ctx); !errors.Is(err, ErrDead) {
		t.Errorf("Listen after Close = %v, want %v", err, ErrDead)
	}
}
