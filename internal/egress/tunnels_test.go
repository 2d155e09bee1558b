package egress

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"cwm/internal/egress/indextest"
)

// holdServer is a server on the host's loopback that holds each
// connection until its client closes it; heard gets one value per
// connection that sends something.
func holdServer(t *testing.T) (addr string, heard <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	acc := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				if _, err := c.Read(make([]byte, 1)); err == nil {
					acc <- struct{}{}
				}
				io.Copy(io.Discard, c)
				c.Close()
			}()
		}
	}()
	return ln.Addr().String(), acc
}

// TestCancelEndsTunnels: when Start's ctx ends, open tunnels are cut. The
// ctx ends once the tunnel carries the sandbox's first byte.
func TestCancelEndsTunnels(t *testing.T) {
	hold, heard := holdServer(t)
	s := sb{newSandbox(t)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := Start(ctx, s.Sandbox, allowIndex(t, hold))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-heard
		cancel()
	}()
	port := strings.TrimPrefix(r.ProxyURL(), "http://127.0.0.1:")
	res := s.run(t, r, fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%s && printf 'CONNECT %s HTTP/1.1\r\n\r\n' >&3 && head -n 2 <&3 | tr -d '\r' && printf x >&3 && cat <&3; echo ended`, port, hold))
	if got := strings.TrimSpace(string(res.Stdout)); got != "HTTP/1.1 200 Connection established\n\nended" {
		t.Errorf("a tunnel when the relay's ctx ends: %q", got)
	}
	if st := r.Close(); st.Conns != 1 {
		t.Errorf("Stats = %+v, want the one tunnel", st)
	}
}

// TestMaxTunnels holds the one tunnel a relay allows open and sends a
// second request: it gets no answer while the first is open (two seconds
// are given to show it, which only a relay without the limit can use),
// and is relayed once the first closes.
func TestMaxTunnels(t *testing.T) {
	ix := indextest.Start(t, indextest.Wheel{Name: "one", Version: "1.0"})
	hold, _ := holdServer(t)
	s := sb{newSandbox(t)}
	p := allowIndex(t, ix.Addr)
	p.Allow(allowIndex(t, hold).Hosts...)
	p.MaxTunnels = 1
	r, err := Start(context.Background(), s.Sandbox, p)
	if err != nil {
		t.Fatal(err)
	}
	port := strings.TrimPrefix(r.ProxyURL(), "http://127.0.0.1:")
	script := fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%[1]s && printf 'CONNECT %[2]s HTTP/1.1\r\n\r\n' >&3 && head -n 1 <&3 | tr -d '\r'
exec 4<>/dev/tcp/127.0.0.1/%[1]s && printf 'GET http://%[3]s/simple/one/ HTTP/1.1\r\nHost: %[3]s\r\n\r\n' >&4
timeout 2 head -n 1 <&4 | tr -d '\r'
echo closing the first
exec 3>&-
head -n 1 <&4 | tr -d '\r'`, port, hold, ix.Addr)
	res := s.run(t, r, script)
	want := "HTTP/1.1 200 Connection established\nclosing the first\nHTTP/1.1 200 OK"
	if got := strings.TrimSpace(string(res.Stdout)); got != want {
		t.Errorf("two requests under MaxTunnels 1:\n%s\nwant:\n%s\n(stderr %s)", got, want, res.Stderr)
	}
	if st := r.Close(); st.Conns != 2 || len(st.Refusals) != 0 {
		t.Errorf("Stats = %+v, want 2 connections relayed one after the other, no refusal", st)
	}
}
