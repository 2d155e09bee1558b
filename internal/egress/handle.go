package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
)

// ServeHTTP relays one request from the sandbox: a CONNECT tunnel, or a
// plain-HTTP request in absolute form, which it forwards. Anything the
// policy does not allow is answered 403 with the reason, which pip and
// curl print, and recorded in Stats.
func (r *Relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if !r.enter() {
		http.Error(w, "cwm egress relay: closed", http.StatusServiceUnavailable)
		return
	}
	defer r.wg.Done()
	host, port, err := target(req)
	if err != nil {
		http.Error(w, "cwm egress relay: "+err.Error(), http.StatusBadRequest)
		return
	}
	entry, why := r.allowed(host, port)
	if why == "" && req.Method != http.MethodConnect {
		why = forwardable(req)
	}
	if why != "" {
		r.refuse(host, port, why)
		deny(w, http.StatusForbidden, refusedMsg(host, port, why))
		return
	}
	// A free tunnel, or the relay's end.
	select {
	case r.sem <- struct{}{}:
		defer func() { <-r.sem }()
	case <-r.ctx.Done():
		http.Error(w, "cwm egress relay: closed", http.StatusServiceUnavailable)
		return
	case <-req.Context().Done():
		return
	}
	if req.Method == http.MethodConnect {
		r.connect(w, req, host, port, entry)
		return
	}
	r.forward(w, req, host, port, entry)
}

// target is the host (lower case, an IP address unbracketed) and port a
// request is for.
func target(req *http.Request) (string, int, error) {
	var hostport, defPort string
	switch {
	case req.Method == http.MethodConnect:
		hostport = req.Host
	case req.URL.IsAbs() && req.URL.Scheme == "http":
		hostport, defPort = req.URL.Host, "80"
	case req.URL.IsAbs():
		return "", 0, fmt.Errorf("%s: only http:// is forwarded; https goes through CONNECT", req.URL.Scheme)
	default:
		return "", 0, fmt.Errorf("%s %s: this is a proxy; ask for an absolute http:// URL or CONNECT host:port", req.Method, req.URL)
	}
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		if defPort == "" {
			return "", 0, fmt.Errorf("CONNECT %q: want host:port", hostport)
		}
		host, p = strings.Trim(hostport, "[]"), defPort
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("%q: port %q is not a TCP port", hostport, p)
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().String()
	}
	if host == "" {
		return "", 0, fmt.Errorf("%q: no host", hostport)
	}
	return host, port, nil
}

// allowed finds the policy's entry for host:port, or says why there is
// none. An IP address the relay never dials is refused as such, whatever
// the list says.
func (r *Relay) allowed(host string, port int) (Host, string) {
	r.mu.Lock()
	stopped := r.stopped
	r.mu.Unlock()
	if stopped != "" {
		return Host{}, stopped
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return r.p.match(host, port)
	}
	if Metadata(a) {
		return Host{}, refusedAddr(a)
	}
	e, why := r.p.match(host, port)
	if w := refusedAddr(a); w != "" && (why != "" || !e.Literal) {
		return Host{}, w
	}
	return e, why
}

// connect opens a tunnel to host:port and relays bytes both ways until
// either side ends.
func (r *Relay) connect(w http.ResponseWriter, req *http.Request, host string, port int, entry Host) {
	peer, _, err := r.dial(req.Context(), host, port, entry, true)
	if r.dialFailed(w, host, port, err) {
		return
	}
	t, buf := r.take(w, host, port, peer)
	if t == nil {
		return
	}
	client := t.client
	defer r.untrack(t)
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Bytes the client sent after its CONNECT may sit in buf.
		io.Copy(peer, io.MultiReader(io.LimitReader(buf.Reader, int64(buf.Reader.Buffered())), client))
		closeWrite(peer)
	}()
	io.Copy(client, peer)
	closeWrite(client)
	wg.Wait()
}

// take hijacks the sandbox's connection and makes it and peer a live
// tunnel, which the caller untracks. It returns nil (and closes both) when
// the hijack fails or the relay has stopped, which the client is told.
func (r *Relay) take(w http.ResponseWriter, host string, port int, peer net.Conn) (*tunnel, *bufio.ReadWriter) {
	client, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		peer.Close()
		http.Error(w, "cwm egress relay: "+err.Error(), http.StatusInternalServerError)
		return nil, nil
	}
	t := &tunnel{host: host, port: port, client: client, peer: peer}
	if why := r.track(t); why != "" {
		r.refuse(host, port, why)
		writeError(client, http.StatusForbidden, refusedMsg(host, port, why))
		peer.Close()
		client.Close()
		return nil, nil
	}
	return t, buf
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	switch c := c.(type) {
	case counted:
		closeWrite(c.Conn)
	case buffered:
		closeWrite(c.Conn)
	}
}

// forward sends a plain-HTTP request on to host:port (or the host's proxy)
// and relays its response; the connection is not reused.
func (r *Relay) forward(w http.ResponseWriter, req *http.Request, host string, port int, entry Host) {
	peer, via, err := r.dial(req.Context(), host, port, entry, false)
	if r.dialFailed(w, host, port, err) {
		return
	}
	// The connection is live (a cap cuts it) before anything is sent.
	out := req.Clone(req.Context())
	t, _ := r.take(w, host, port, peer)
	if t == nil {
		return
	}
	client := t.client
	defer r.untrack(t)
	out.RequestURI = ""
	out.Close = true
	out.Body, out.ContentLength = nil, 0
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade"} {
		out.Header.Del(h)
	}
	if via != nil {
		if auth := proxyAuth(via); auth != "" {
			out.Header.Set("Proxy-Authorization", auth)
		}
		err = out.WriteProxy(peer)
	} else {
		err = out.Write(peer)
	}
	if err != nil {
		r.fail(host, port, err)
		writeError(client, http.StatusBadGateway, "cwm egress relay: send request: "+err.Error())
		return
	}
	resp, err := http.ReadResponse(bufio.NewReader(peer), out)
	if err != nil {
		r.fail(host, port, err)
		writeError(client, http.StatusBadGateway, "cwm egress relay: read response: "+err.Error())
		return
	}
	defer resp.Body.Close()
	resp.Close = true
	resp.Write(client)
}

// forwardable says why a plain-HTTP request is not forwarded, or "": only
// reads (GET, HEAD) without a body are, which is all an index or a Debian
// mirror serves; sending data out is not an install step's business.
func forwardable(req *http.Request) string {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return "only GET and HEAD are forwarded over plain HTTP, not " + req.Method
	}
	if req.ContentLength != 0 || len(req.TransferEncoding) > 0 {
		return "a request body is not forwarded over plain HTTP"
	}
	return ""
}

// dialFailed answers a failed dial: 403 for a refusal, 502 otherwise.
func (r *Relay) dialFailed(w http.ResponseWriter, host string, port int, err error) bool {
	if err == nil {
		return false
	}
	hp := net.JoinHostPort(host, strconv.Itoa(port))
	var ref *refusal
	if errors.As(err, &ref) {
		r.refuse(host, port, ref.why)
		deny(w, http.StatusForbidden, refusedMsg(host, port, ref.why))
		return true
	}
	r.fail(host, port, err)
	deny(w, http.StatusBadGateway, fmt.Sprintf("cwm egress relay could not reach %s: %v", hp, err))
	return true
}

func refusedMsg(host string, port int, why string) string {
	return fmt.Sprintf("cwm egress relay refused %s: %s", net.JoinHostPort(host, strconv.Itoa(port)), why)
}

// deny answers a request with code and msg as the status line's reason
// phrase as well as the body: clients print the status line of a failed
// CONNECT ("Tunnel connection failed: 403 ..."), never its body.
func deny(w http.ResponseWriter, code int, msg string) {
	c, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, msg, code)
		return
	}
	defer c.Close()
	writeError(c, code, msg)
}

// writeError answers on a hijacked connection.
func writeError(c net.Conn, code int, msg string) {
	reason := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, msg)
	msg += "\n"
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, reason, len(msg), msg)
}
