package egress

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"syscall"
	"time"
)

// refusal is a dial the relay would not make; its why goes to Stats.
type refusal struct{ why string }

func (e *refusal) Error() string { return "refused: " + e.why }

// control is the dialer's Control hook: it runs after the name is resolved
// and before connect(2), on the very address dialled, so a name that
// resolves to a forbidden address (at first, or only when dialled: DNS
// rebinding) never reaches it. literal (an address the operator gave)
// waives the check but for metadata addresses.
func control(literal bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		a, err := netip.ParseAddr(host)
		if err != nil {
			return &refusal{why: "resolves to " + host + ", not an address"}
		}
		why := refusedAddr(a)
		if why == "" || literal && !Metadata(a) {
			return nil
		}
		return &refusal{why: fmt.Sprintf("resolves to %s, %s", a.Unmap(), why)}
	}
}

const dialTimeout = 30 * time.Second

// dial connects to host:port for the sandbox, directly or through the
// host's proxy (returned as via when used). tunnel says whether the
// sandbox asked for a CONNECT tunnel (else it is a plain-HTTP request).
func (r *Relay) dial(ctx context.Context, host string, port int, entry Host, tunnel bool) (net.Conn, *url.URL, error) {
	hp := net.JoinHostPort(host, strconv.Itoa(port))
	var via *url.URL
	if r.p.Proxy != nil {
		scheme := "http"
		if tunnel {
			scheme = "https"
		}
		u, err := r.p.Proxy(&url.URL{Scheme: scheme, Host: hp})
		if err != nil {
			return nil, nil, fmt.Errorf("the host's proxy for %s: %w", hp, err)
		}
		via = u
	}
	if via == nil {
		c, err := r.dialDirect(ctx, host, port, entry.Literal)
		if err != nil {
			return nil, nil, err
		}
		return counted{c, r}, nil, nil
	}
	// The proxy resolves what it is given. The relay checks the name's
	// addresses first and, for a tunnel, gives the proxy the address it
	// checked; a name the host cannot resolve is the proxy's to resolve
	// (hosts behind a proxy often have no DNS of their own).
	target := host
	if _, err := netip.ParseAddr(host); err != nil && !entry.Literal {
		if addrs, err := r.resolve(ctx, host); err == nil {
			a, err := pick(addrs)
			if err != nil {
				return nil, nil, err
			}
			if tunnel {
				target = a.String()
			}
		}
	}
	c, err := dialProxy(ctx, via)
	if err != nil {
		return nil, nil, err
	}
	if tunnel {
		if c, err = proxyConnect(c, via, net.JoinHostPort(target, strconv.Itoa(port))); err != nil {
			return nil, nil, err
		}
	}
	return counted{c, r}, via, nil
}

// pick is the first address the relay may dial, or the refusal of the
// first when none is.
func pick(addrs []netip.Addr) (netip.Addr, error) {
	for _, a := range addrs {
		if refusedAddr(a) == "" {
			return a, nil
		}
	}
	if len(addrs) == 0 {
		return netip.Addr{}, fmt.Errorf("no address")
	}
	return netip.Addr{}, &refusal{why: fmt.Sprintf("resolves to %s, %s", addrs[0].Unmap(), refusedAddr(addrs[0]))}
}

func (r *Relay) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if r.p.Resolve != nil {
		return r.p.Resolve(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

func (r *Relay) dialDirect(ctx context.Context, host string, port int, literal bool) (net.Conn, error) {
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second, Control: control(literal)}
	if _, err := netip.ParseAddr(host); err == nil || r.p.Resolve == nil {
		return d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	}
	addrs, err := r.p.Resolve(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no address", host)
	}
	var first error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a.String(), strconv.Itoa(port)))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// dialProxy connects to the host's proxy, which the host's environment
// names (so it may be on loopback), though never at a metadata address.
func dialProxy(ctx context.Context, u *url.URL) (net.Conn, error) {
	if u.Scheme != "http" {
		return nil, fmt.Errorf("the host's proxy %s: only http:// proxies are supported", u.Redacted())
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second, Control: control(true)}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("the host's proxy %s: %w", u.Redacted(), err)
	}
	return c, nil
}

// proxyAuth is the Proxy-Authorization of a proxy URL with credentials.
func proxyAuth(u *url.URL) string {
	if u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw))
}

// proxyConnect asks the host's proxy for a tunnel to hostport.
func proxyConnect(c net.Conn, via *url.URL, hostport string) (net.Conn, error) {
	c.SetDeadline(time.Now().Add(dialTimeout))
	req := "CONNECT " + hostport + " HTTP/1.1\r\nHost: " + hostport + "\r\n"
	if auth := proxyAuth(via); auth != "" {
		req += "Proxy-Authorization: " + auth + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		c.Close()
		return nil, fmt.Errorf("the host's proxy %s: %w", via.Redacted(), err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("the host's proxy %s: %w", via.Redacted(), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, fmt.Errorf("the host's proxy %s answered CONNECT %s with %s", via.Redacted(), hostport, resp.Status)
	}
	c.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		return buffered{c, io.MultiReader(io.LimitReader(br, int64(br.Buffered())), c)}, nil
	}
	return c, nil
}

// buffered is a connection some of whose bytes were read ahead.
type buffered struct {
	net.Conn
	r io.Reader
}

func (b buffered) Read(p []byte) (int, error) { return b.r.Read(p) }
