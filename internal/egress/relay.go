package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cwm/internal/sandbox"
)

// Relay is a running relay. Close ends it and says what it did.
type Relay struct {
	p   Policy
	ln  net.Listener
	srv *http.Server
	sem chan struct{} // one token per tunnel at once

	// ctx is the relay's lifecycle: cancelled by Close, by Start's ctx and
	// by a cap, it ends every dial and tunnel; wg counts the handlers.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	timer  *time.Timer

	bytes atomic.Int64

	mu      sync.Mutex
	closing bool                 // no new handler may start
	stopped string               // why the relay stopped relaying (a cap), or ""
	live    map[*tunnel]struct{} // connections being relayed
	stats   Stats
}

// Stats is what a relay did over its life.
type Stats struct {
	// Conns counts the connections relayed: CONNECT tunnels and forwarded
	// plain-HTTP requests.
	Conns int `json:"conns"`
	// Bytes counts the bytes relayed, both ways.
	Bytes int64 `json:"bytes"`
	// Refusals are the connections the policy or a cap refused or cut.
	Refusals []Refusal `json:"refusals,omitempty"`
	// Failures are allowed connections that could not be made (a name
	// that does not resolve, a host that does not answer).
	Failures []Refusal `json:"failures,omitempty"`
}

// Refusal names one refused connection and why.
type Refusal struct {
	Host string `json:"host"`
	Port int    `json:"port"`
	Why  string `json:"why"`
}

// String is "host:port (why)", as a step's note shows it.
func (r Refusal) String() string {
	return net.JoinHostPort(r.Host, strconv.Itoa(r.Port)) + " (" + r.Why + ")"
}

// tunnel is one relayed connection: the sandbox's side and the remote's.
type tunnel struct {
	host         string
	port         int
	client, peer net.Conn
}

// Start serves a relay on a new listener in sb's network namespace (see
// sandbox.Listen). Commands in sb reach it at ProxyURL; Env gives the
// variables that tell pip, uv, curl and apt to use it. It runs until Close,
// until ctx ends, or until a cap stops it.
func Start(ctx context.Context, sb *sandbox.Sandbox, p Policy) (*Relay, error) {
	f, err := sb.Listen(ctx)
	if err != nil {
		return nil, fmt.Errorf("start egress relay: %w", err)
	}
	defer f.Close() // FileListener made its own copy
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("start egress relay: %w", err)
	}
	return Serve(ctx, ln, p), nil
}

// Serve runs a relay on ln, which it closes when it ends. Start is Serve on
// a sandbox's listener; tests serve a relay on the host's loopback as the
// host's proxy of another.
func Serve(ctx context.Context, ln net.Listener, p Policy) *Relay {
	if p.MaxBytes <= 0 {
		p.MaxBytes = DefaultMaxBytes
	}
	if p.MaxTime <= 0 {
		p.MaxTime = DefaultMaxTime
	}
	if p.MaxTunnels <= 0 {
		p.MaxTunnels = DefaultMaxTunnels
	}
	r := &Relay{p: p, ln: ln, sem: make(chan struct{}, p.MaxTunnels), live: map[*tunnel]struct{}{}}
	r.ctx, r.cancel = context.WithCancel(ctx)
	r.srv = &http.Server{
		Handler:           r,
		ReadHeaderTimeout: time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return r.ctx },
	}
	r.timer = time.AfterFunc(p.MaxTime, func() { r.stop(fmt.Sprintf("the step's time cap of %v was reached", p.MaxTime)) })
	// A cancelled ctx ends the relay as Close would, but for the stats.
	context.AfterFunc(r.ctx, func() {
		r.srv.Close()
		r.closeLive()
	})
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.srv.Serve(ln)
	}()
	return r
}

// ProxyURL is the relay's address as commands in the sandbox reach it:
// http://127.0.0.1:PORT.
func (r *Relay) ProxyURL() string { return "http://" + r.ln.Addr().String() }

// Env is the environment that points pip, uv, curl, git and apt at the
// relay (upper and lower case: tools read one or the other). NO_PROXY is
// emptied, so that nothing, not even a loopback index, is reached
// except through the relay.
func (r *Relay) Env() []string {
	u := r.ProxyURL()
	var env []string
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"} {
		env = append(env, k+"="+u, strings.ToLower(k)+"="+u)
	}
	return append(env, "NO_PROXY=", "no_proxy=")
}

// Close stops the relay: its listener, every tunnel, every dial. It
// returns what the relay did; Close again returns the same.
func (r *Relay) Close() Stats {
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	r.timer.Stop()
	r.cancel()
	r.srv.Close()
	r.closeLive()
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.stats
	st.Bytes = r.bytes.Load()
	st.Refusals = append([]Refusal(nil), st.Refusals...)
	st.Failures = append([]Refusal(nil), st.Failures...)
	return st
}

// stop ends relaying for good (a cap was reached): the tunnels open now
// are cut, each named with why, and every later request is refused.
func (r *Relay) stop(why string) {
	r.mu.Lock()
	if r.stopped != "" || r.closing {
		r.mu.Unlock()
		return
	}
	r.stopped = why
	for t := range r.live {
		r.stats.Refusals = append(r.stats.Refusals, Refusal{t.host, t.port, why})
	}
	r.mu.Unlock()
	r.closeLive()
}

func (r *Relay) closeLive() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for t := range r.live {
		t.client.Close()
		if t.peer != nil {
			t.peer.Close()
		}
	}
}

// enter registers a handler, unless the relay is closing.
func (r *Relay) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return false
	}
	r.wg.Add(1)
	return true
}

func (r *Relay) refuse(host string, port int, why string) {
	r.mu.Lock()
	r.stats.Refusals = append(r.stats.Refusals, Refusal{host, port, why})
	r.mu.Unlock()
}

func (r *Relay) fail(host string, port int, err error) {
	r.mu.Lock()
	r.stats.Failures = append(r.stats.Failures, Refusal{host, port, err.Error()})
	r.mu.Unlock()
}

// track registers t as live, unless the relay has stopped (then it says
// why).
func (r *Relay) track(t *tunnel) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped != "" {
		return r.stopped
	}
	if r.ctx.Err() != nil {
		return "the relay was closed"
	}
	r.live[t] = struct{}{}
	r.stats.Conns++
	return ""
}

func (r *Relay) untrack(t *tunnel) {
	r.mu.Lock()
	delete(r.live, t)
	r.mu.Unlock()
	t.client.Close()
	if t.peer != nil {
		t.peer.Close()
	}
}

// counted counts what passes through a remote connection against the
// relay's byte cap; past the cap the relay stops.
type counted struct {
	net.Conn
	r *Relay
}

var errByteCap = errors.New("byte cap reached")

func (c counted) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.r.add(n) {
		return n, errByteCap
	}
	return n, err
}

func (c counted) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 && c.r.add(n) {
		return n, errByteCap
	}
	return n, err
}

// add counts n bytes; it reports whether the cap is now passed (and then
// stops the relay).
func (r *Relay) add(n int) bool {
	if r.bytes.Add(int64(n)) <= r.p.MaxBytes {
		return false
	}
	r.stop(fmt.Sprintf("the step's byte cap of %d bytes was reached", r.p.MaxBytes))
	return true
}
