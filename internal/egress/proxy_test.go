package egress

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	"cwm/internal/egress/indextest"
)

// TestThroughHostProxy chains the sandbox's relay to a second relay on the
// host's loopback acting as the host's proxy: pip's plain-HTTP requests
// are forwarded to it in absolute form, and a CONNECT tunnel is chained
// with a CONNECT of its own.
func TestThroughHostProxy(t *testing.T) {
	ix := indextest.Start(t, indextest.Wheel{Name: "chained", Version: "3.0"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	upstream := Serve(context.Background(), ln, allowIndex(t, ix.Addr))
	defer upstream.Close()
	up, _ := url.Parse(upstream.ProxyURL())

	s := sb{newSandbox(t)}
	p := allowIndex(t, ix.Addr)
	p.Proxy = func(*url.URL) (*url.URL, error) { return up, nil }
	r, err := Start(context.Background(), s.Sandbox, p)
	if err != nil {
		t.Fatal(err)
	}
	res := s.run(t, r, "python3 -m pip download --no-cache-dir --retries 0 -d /tmp/d --index-url "+ix.URL+" chained && ls /tmp/d")
	if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "chained-3.0-py3-none-any.whl") {
		t.Fatalf("pip download through both relays: exit %d\n%s", res.ExitCode, output(res))
	}
	// A tunnel: CONNECT, then a request of the sandbox's own through it.
	port := strings.TrimPrefix(r.ProxyURL(), "http://127.0.0.1:")
	res = s.run(t, r, fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%s && printf 'CONNECT %s HTTP/1.1\r\n\r\n' >&3 && head -n 2 <&3 >/dev/null && printf 'GET /simple/chained/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' >&3 && cat <&3`, port, ix.Addr, ix.Addr))
	if !strings.Contains(string(res.Stdout), "chained-3.0-py3-none-any.whl") {
		t.Errorf("a request through a chained tunnel: %s", output(res))
	}
	down, ups := r.Close(), upstream.Close()
	if len(down.Refusals)+len(ups.Refusals)+len(down.Failures)+len(ups.Failures) != 0 || ups.Conns != down.Conns || ups.Conns < 3 {
		t.Errorf("sandbox's relay %+v, host's proxy %+v: want the same connections through both (at least 3), no refusal", down, ups)
	}
	if n := len(ix.Requests()); n != 3 {
		t.Errorf("the index served %d requests, want 3: %q", n, ix.Requests())
	}
}

// TestHostProxyFromEnvironment reads the host's proxy the way pip and curl
// do: HTTPS_PROXY for tunnels, HTTP_PROXY for plain HTTP, NO_PROXY's
// exceptions, lower case as well.
func TestHostProxyFromEnvironment(t *testing.T) {
	env := map[string]string{"https_proxy": "http://u:p@proxy.test:3128", "HTTP_PROXY": "http://plain.test:8080", "NO_PROXY": "inside.test,.corp.test"}
	prox := host{getenv: func(k string) string { return env[k] }}.proxy()
	for _, c := range []struct{ target, want string }{
		{"https://files.test:443", "http://u:p@proxy.test:3128"},
		{"http://deb.test:80", "http://plain.test:8080"},
		{"https://inside.test:443", ""},
		{"https://a.corp.test:443", ""},
	} {
		u, _ := url.Parse(c.target)
		got, err := prox(u)
		s := ""
		if got != nil {
			s = got.String()
		}
		if err != nil || s != c.want {
			t.Errorf("proxy(%s) = %q, %v; want %q", c.target, s, err, c.want)
		}
	}
	if p := (host{getenv: func(string) string { return "" }}).proxy(); p != nil {
		t.Errorf("proxy() without a proxy in the environment is not nil")
	}
}
