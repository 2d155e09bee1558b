package envoci

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"cwm/internal/egress"
	"cwm/internal/errkind"
)

// A registry, or whatever it redirects to (blobs usually live in a
// bucket), is never a link-local or cloud metadata address (the list is
// egress.Metadata's, shared with the install steps' relay). The check sits
// in the dialer's Control hook, which runs after the name is resolved and
// before the connection is made, so no packet reaches such an address; and
// in the transport, for addresses written in a URL that a proxy would
// dial. Loopback stays allowed: local registries.
func forbidden(a netip.Addr) bool { return egress.Metadata(a) }

// refuseMetadata is a net.Dialer's Control: it refuses the connection to
// a forbidden address before it is made.
func refuseMetadata(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	if a, err := netip.ParseAddr(host); err == nil && forbidden(a) {
		return errkind.Errorf(errkind.Input, "refused to connect to %s: a link-local or cloud metadata address is never a registry's", address)
	}
	return nil
}

// guardedTransport is the transport of a registry: o's (its dialer left
// as it is if it is not an *http.Transport), or go-containerregistry's
// default, with the dialer refusing forbidden addresses, and manifests
// cut at maxManifest bytes as they are read.
func guardedTransport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = remote.DefaultTransport
	}
	if t, ok := rt.(*http.Transport); ok {
		t = t.Clone()
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: refuseMetadata}
		t.DialContext = d.DialContext
		rt = t
	}
	return guard{rt}
}

type guard struct{ rt http.RoundTripper }

func (g guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if a, err := netip.ParseAddr(strings.Trim(req.URL.Hostname(), "[]")); err == nil && forbidden(a) {
		return nil, errkind.Errorf(errkind.Input, "refused to fetch %s: a link-local or cloud metadata address is never a registry's", req.URL.Redacted())
	}
	resp, err := g.rt.RoundTrip(req)
	if err != nil || !strings.Contains(req.URL.Path, "/manifests/") {
		return resp, err
	}
	if resp.ContentLength > maxManifest {
		resp.Body.Close()
		return nil, errkind.Errorf(errkind.Input, "%s: a manifest of %d bytes is not an environment's (at most %d)", req.URL.Redacted(), resp.ContentLength, maxManifest)
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: maxManifest, url: req.URL.Redacted()}
	return resp, nil
}

// cappedBody fails once more than left bytes are read, so that a
// registry's endless manifest costs at most maxManifest of memory.
type cappedBody struct {
	io.ReadCloser
	left int64
	url  string
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, errkind.Errorf(errkind.Input, "%s: a manifest of more than %d bytes is not an environment's", c.url, maxManifest)
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, errkind.Errorf(errkind.Input, "%s: a manifest of more than %d bytes is not an environment's", c.url, maxManifest)
	}
	return n, err
}
